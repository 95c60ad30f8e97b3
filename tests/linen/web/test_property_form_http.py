"""The property form over HTTP: time zone, PMS reference, room counts and the active flag, with
the Data API's rules, and an edit that keeps what was set through the API."""

from __future__ import annotations

from httpx import AsyncClient

from tests.console.signin import csrf_of
from tests.linen.helpers import NAPKIN, World
from tests.linen.web.html_forms import form_fields, offered
from tests.linen.web.test_pages_http import DAY, web_sign_in


async def test_a_property_is_made_in_its_time_zone_with_its_rooms(
    app_client: AsyncClient, world: World
) -> None:
    await web_sign_in(app_client, "admin")
    form = await app_client.get("/app/properties/new")
    assert '<option value="Europe/Lisbon">' in form.text  # the zones offered
    assert 'name="timezone"' in form.text
    csrf = csrf_of(form.text)
    fields = {"csrf": csrf, "code": "LIS-01", "name": "Alfama", "timezone": "Europe/Lisbon",
              "externalRef": "PMS-4411", "bedrooms": "2", "bathrooms": "1", "maxGuests": "5",
              "active": "1"}  # fmt: skip
    for bad in ({"timezone": "Mars/Olympus"}, {"timezone": "posix/Europe/Lisbon"},
                {"timezone": ""}, {"bedrooms": "-1"}, {"maxGuests": "1001"},
                {"bathrooms": "two"}, {"externalRef": "x" * 129}):  # fmt: skip
        refused = await app_client.post("/app/properties", data={**fields, **bad})
        assert refused.status_code == 400, bad
    listed = (await world.portal.get("/v1/properties")).json()["data"]
    assert [p["code"] for p in listed] == ["SEA-01"]  # nothing was made by a refusal
    made = await app_client.post("/app/properties", data=fields)
    assert made.status_code == 303, made.text
    prop_id = int(made.headers["location"].rsplit("/", 1)[1])
    api = (await world.portal.get(f"/v1/properties/{prop_id}")).json()
    got = {k: api[k] for k in ("timezone", "externalRef", "bedrooms", "bathrooms", "maxGuests")}
    assert got == {"timezone": "Europe/Lisbon", "externalRef": "PMS-4411", "bedrooms": 2,
                   "bathrooms": 1, "maxGuests": 5}  # fmt: skip
    assert api["active"] is True
    detail = await app_client.get(made.headers["location"])
    assert '<dd id="timezone">Europe/Lisbon</dd>' in detail.text
    assert "PMS-4411" in detail.text


async def test_an_edit_keeps_what_the_api_set_and_retires_the_property(
    app_client: AsyncClient, world: World
) -> None:
    patched = await world.portal.patch(
        f"/v1/properties/{world.property}",
        {"timezone": "Asia/Tokyo", "externalRef": "PMS-9", "bedrooms": 3, "bathrooms": 2,
         "maxGuests": 6},
    )  # fmt: skip
    assert patched.status_code == 200, patched.text
    before = patched.json()
    await web_sign_in(app_client, "admin")
    form = await app_client.get(f"/app/properties/{world.property}/edit")
    saved = await app_client.post(
        f"/app/properties/{world.property}", data=form_fields(form.text, "property-form")
    )
    assert saved.status_code == 303, saved.text
    after = (await world.portal.get(f"/v1/properties/{world.property}")).json()
    unchanged = ("timezone", "externalRef", "bedrooms", "bathrooms", "maxGuests", "active",
                 "defaultLaundryId", "address", "beds", "deliveryNote")  # fmt: skip
    assert {k: after[k] for k in unchanged} == {k: before[k] for k in unchanged}

    retired = form_fields(form.text, "property-form")
    del retired["active"]  # the box unticked
    saved = await app_client.post(f"/app/properties/{world.property}", data=retired)
    assert saved.status_code == 303
    assert (await world.portal.get(f"/v1/properties/{world.property}")).json()["active"] is False
    detail = await app_client.get(f"/app/properties/{world.property}")
    assert '<small class="muted">inactive</small>' in detail.text
    no_sheet = await app_client.post(
        "/app/sheets",
        data={"csrf": csrf_of(detail.text), "property_id": str(world.property),
              "service_date": DAY},
    )  # fmt: skip
    assert no_sheet.status_code == 409  # inactive: no new orders


async def test_a_refused_form_leads_back_to_its_page(app_client: AsyncClient, world: World) -> None:
    await web_sign_in(app_client, "admin")
    form = await app_client.get("/app/properties/new")
    here = f"{app_client.base_url}/app/properties/new"
    refused = await app_client.post(
        "/app/properties",
        data={"csrf": csrf_of(form.text), "code": "LIS-01", "name": "Alfama", "bedrooms": "-1"},
        headers={"Referer": here},
    )
    assert refused.status_code == 400
    assert '<a href="/app/properties/new">Back to the form</a>' in refused.text


async def test_the_par_levels_offer_active_item_types_and_keep_the_retired_ones_listed(
    app_client: AsyncClient, world: World
) -> None:
    """Decision 0524: a retired item type is not offered as a new par level, and stays, marked,
    in the form of a property that lists it; saving that form unchanged keeps it."""
    portal = world.portal
    napkin = await portal.made("/v1/item-types", NAPKIN)
    par = [{"itemTypeId": world.duvet, "qty": 2}, {"itemTypeId": world.towel, "qty": 4}]
    assert (await portal.patch(f"/v1/properties/{world.property}", {"linenPar": par})).is_success
    await portal.retire(world.towel, napkin["id"])
    await web_sign_in(app_client, "admin")
    fresh = await app_client.get("/app/properties/new")
    assert offered(fresh.text, "par_") == {world.duvet}
    form = await app_client.get(f"/app/properties/{world.property}/edit")
    assert offered(form.text, "par_") == {world.duvet, world.towel}
    marked = f'Bath towel (retired) <input type="number" min="0" name="par_{world.towel}" value="4"'
    assert marked in form.text
    fields = form_fields(form.text, "property-form")
    saved = await app_client.post(f"/app/properties/{world.property}", data=fields)
    assert saved.status_code == 303, saved.text
    refused = await app_client.post(
        f"/app/properties/{world.property}", data={**fields, f"par_{napkin['id']}": ["1"]}
    )
    assert refused.status_code == 409
    api = (await portal.get(f"/v1/properties/{world.property}")).json()
    assert api["linenPar"] == par
    detail = await app_client.get(f"/app/properties/{world.property}")
    assert "<td>Bath towel (retired)</td>" in detail.text
