"""The sheet actions of the web app over HTTP: re-issuing a confirmed sheet as a new draft, and
a new sheet from a property's par levels for a laundry of one's choice."""

from __future__ import annotations

from httpx import AsyncClient

from tests.console.signin import csrf_of
from tests.linen.helpers import World
from tests.linen.web.html_forms import form_fields
from tests.linen.web.test_pages_http import DAY, web_sign_in


async def test_a_confirmed_sheet_is_reissued_as_a_draft_copy(
    app_client: AsyncClient, world: World
) -> None:
    portal = world.portal
    sheet = await world.sheet(
        DAY, pickupDate="2026-01-11", bookingRef="BK-77", guestCount=4, notes="late check-out",
        reason="restock",
    )  # fmt: skip
    assert (await portal.post(f"/v1/sheets/{sheet['id']}/confirm")).status_code == 200
    await web_sign_in(app_client, "admin")
    page = await app_client.get(f"/app/sheets/{sheet['id']}")
    assert f'action="/app/sheets/{sheet["id"]}/reissue"' in page.text
    reissued = await app_client.post(
        f"/app/sheets/{sheet['id']}/reissue", data={"csrf": csrf_of(page.text)}
    )
    assert reissued.status_code == 303, reissued.text
    new_id = int(reissued.headers["location"].rsplit("/", 1)[1])
    assert new_id != sheet["id"]

    old = (await portal.get(f"/v1/sheets/{sheet['id']}")).json()
    assert (old["status"], old["cancelReason"]) == ("cancelled", "re-issued")
    new = (await portal.get(f"/v1/sheets/{new_id}")).json()
    assert new["status"] == "draft"
    assert new["number"] != old["number"]
    copied = ("propertyId", "laundryId", "serviceDate", "pickupDate", "reason", "bookingRef",
              "guestCount", "notes")  # fmt: skip
    assert {k: new[k] for k in copied} == {k: old[k] for k in copied}
    assert [(x["itemTypeId"], x["qtyOrdered"]) for x in new["lines"]] == [
        (world.duvet, 2), (world.towel, 4),
    ]  # fmt: skip

    landing = await app_client.get(reissued.headers["location"])
    assert landing.status_code == 200
    assert new["number"] in landing.text
    assert 'id="edit-lines"' in landing.text  # a draft: its lines are edited here
    assert f'name="qty_{world.towel}" value="4"' in landing.text


async def test_a_delivered_sheet_is_not_reissued(app_client: AsyncClient, world: World) -> None:
    sheet = await world.delivered(DAY)
    await web_sign_in(app_client, "admin")
    page = await app_client.get(f"/app/sheets/{sheet['id']}")
    assert "/reissue" not in page.text
    refused = await app_client.post(
        f"/app/sheets/{sheet['id']}/reissue", data={"csrf": csrf_of(page.text)}
    )
    assert refused.status_code == 409
    listed = (await world.portal.get("/v1/sheets")).json()["data"]
    assert [(s["id"], s["status"]) for s in listed] == [(sheet["id"], "delivered")]


async def test_a_new_sheet_goes_to_the_laundry_chosen_among_the_active_ones(
    app_client: AsyncClient, world: World
) -> None:
    portal = world.portal
    other = await portal.made("/v1/laundries", {"name": "Second Laundry"})
    closed = await portal.made("/v1/laundries", {"name": "Closed Laundry", "active": False})
    bare = await portal.made(
        "/v1/properties",
        {"code": "BARE-01", "name": "No laundry yet",
         "linenPar": [{"itemTypeId": world.towel, "qty": 3}]},
    )  # fmt: skip
    await web_sign_in(app_client, "admin")
    page = await app_client.get(f"/app/properties/{world.property}")
    new_sheet = form_fields(page.text, "new-sheet")
    assert new_sheet["laundry_id"] == [str(world.laundry)]  # the property's, preselected
    assert f'<option value="{other["id"]}">Second Laundry</option>' in page.text
    assert "Closed Laundry" not in page.text.split('id="new-sheet"')[1]
    csrf = csrf_of(page.text)

    page = await app_client.get(f"/app/properties/{bare['id']}")
    assert "laundry_id" not in form_fields(page.text, "new-sheet")  # nothing chosen yet
    made = await app_client.post(
        "/app/sheets",
        data={"csrf": csrf, "property_id": str(bare["id"]), "service_date": DAY,
              "laundry_id": str(other["id"])},
    )  # fmt: skip
    assert made.status_code == 303, made.text
    sheet_id = int(made.headers["location"].rsplit("/", 1)[1])
    api = (await portal.get(f"/v1/sheets/{sheet_id}")).json()
    assert (api["laundryId"], api["status"]) == (other["id"], "draft")
    assert [(x["itemTypeId"], x["qtyOrdered"]) for x in api["lines"]] == [(world.towel, 3)]
    for laundry, status in (("", 400), (str(closed["id"]), 409), ("x", 400)):
        refused = await app_client.post(
            "/app/sheets",
            data={"csrf": csrf, "property_id": str(bare["id"]), "service_date": DAY,
                  "laundry_id": laundry},
        )  # fmt: skip
        assert refused.status_code == status, laundry
    assert (await portal.get("/v1/sheets")).json()["total"] == 1


async def test_the_property_form_offers_active_laundries_and_keeps_the_current_one(
    app_client: AsyncClient, world: World
) -> None:
    await world.portal.made("/v1/laundries", {"name": "Closed Laundry", "active": False})
    await web_sign_in(app_client, "admin")
    fresh = await app_client.get("/app/properties/new")
    assert "Closed Laundry" not in fresh.text
    assert f'<option value="{world.laundry}">Blanc Laundry</option>' in fresh.text
    edit = await app_client.get(f"/app/properties/{world.property}/edit")
    assert "Closed Laundry" not in edit.text

    paused = await world.portal.patch(f"/v1/laundries/{world.laundry}", {"active": False})
    assert paused.status_code == 200
    edit = await app_client.get(f"/app/properties/{world.property}/edit")
    assert f'<option value="{world.laundry}" selected>Blanc Laundry (inactive)</option>' in (
        edit.text
    )
    assert "Closed Laundry" not in edit.text
    saved = await app_client.post(
        f"/app/properties/{world.property}", data=form_fields(edit.text, "property-form")
    )
    assert saved.status_code == 303, saved.text
    api = (await world.portal.get(f"/v1/properties/{world.property}")).json()
    assert api["defaultLaundryId"] == world.laundry  # kept, though no longer offered to others
    detail = await app_client.get(f"/app/properties/{world.property}")
    assert "Blanc Laundry</a> (inactive)" in detail.text


async def test_a_sheet_of_sets_shows_what_their_pieces_cost_and_weigh(
    app_client: AsyncClient, world: World
) -> None:
    portal = world.portal
    _, bed_set = await world.bed_set()
    sheet = await portal.made(
        "/v1/sheets",
        {"propertyId": world.property, "serviceDate": DAY,
         "lines": [{"itemTypeId": bed_set["id"], "qtyOrdered": 3}]},
    )  # fmt: skip
    # 3 x (a duvet cover at 2.50 and two pillowcases of 150 g at 3.00 per kg) and the delivery
    # fee of 5.00; 3 x (900 + 2 x 150) g.
    assert (sheet["weightKg"], sheet["estimatedCost"]["amount"]) == (3.6, 1520)
    await web_sign_in(app_client, "admin")
    page = (await app_client.get(f"/app/sheets/{sheet['id']}")).text
    assert '<dd id="estimated-cost">15.20 EUR</dd>' in page
    assert '<dd id="weight">3.6 kg</dd>' in page
