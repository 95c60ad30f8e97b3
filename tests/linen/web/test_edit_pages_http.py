"""The web app's create and edit forms over HTTP: item types and groups, laundries and their
price lists, vault entries, an invoice recorded by hand, the statistics filters; each read back
through the Data API, and refused to the read-only roles."""

from __future__ import annotations

import csv
import io
import re

from httpx import AsyncClient

from tests.console.signin import csrf_of
from tests.linen.helpers import NAPKIN, World, make_pdf
from tests.linen.web.html_forms import offered
from tests.linen.web.test_pages_http import web_sign_in


async def test_an_admin_edits_an_item_type_into_a_set_and_a_group(
    app_client: AsyncClient, world: World
) -> None:
    group = await world.portal.made("/v1/groups", {"name": "Porto", "kind": "region"})
    await web_sign_in(app_client, "admin")
    listed = await app_client.get("/app/catalogue")
    assert f"/app/catalogue/item-types/{world.duvet}/edit" in listed.text
    kit = await world.portal.made(
        "/v1/item-types", {"code": "KIT", "name": "Kit", "category": "bed"}
    )
    form = await app_client.get(f"/app/catalogue/item-types/{kit['id']}/edit")
    assert form.status_code == 200
    assert f'name="part_{kit["id"]}"' not in form.text  # not a part of itself
    csrf = csrf_of(form.text)
    saved = await app_client.post(
        f"/app/catalogue/item-types/{kit['id']}",
        data={"csrf": csrf, "code": "KIT_DOUBLE", "name": "Double kit", "category": "bed",
              "size": "double", "weightGrams": "1900", "active": "1",
              f"part_{world.duvet}": "1", f"part_{world.towel}": "2"},
    )  # fmt: skip
    assert saved.status_code == 303, saved.text
    api = (await world.portal.get(f"/v1/item-types/{kit['id']}")).json()
    assert (api["code"], api["unit"], api["size"], api["weightGrams"]) == (
        "KIT_DOUBLE", "set", "double", 1900,
    )  # fmt: skip
    assert sorted((c["itemTypeId"], c["qty"]) for c in api["components"]) == sorted(
        [(world.duvet, 1), (world.towel, 2)]
    )
    retired = await app_client.post(
        f"/app/catalogue/item-types/{world.towel}",
        data={"csrf": csrf, "code": "TOWEL_BATH", "name": "Bath towel", "category": "bath"},
    )  # no `active` box: retired
    assert retired.status_code == 303
    assert (await world.portal.get(f"/v1/item-types/{world.towel}")).json()["active"] is False
    clash = await app_client.post(
        f"/app/catalogue/item-types/{world.towel}",
        data={"csrf": csrf, "code": "KIT_DOUBLE", "name": "x", "category": "bath"},
    )
    assert clash.status_code == 409

    group_form = await app_client.get(f"/app/catalogue/groups/{group['id']}/edit")
    assert group_form.status_code == 200
    moved = await app_client.post(
        f"/app/catalogue/groups/{group['id']}",
        data={"csrf": csrf, "name": "Porto centre", "kind": "region", "notes": "old town",
              "propertyIds": str(world.property)},
    )  # fmt: skip
    assert moved.status_code == 303
    api = (await world.portal.get(f"/v1/groups/{group['id']}")).json()
    assert (api["name"], api["notes"], api["propertyIds"]) == (
        "Porto centre", "old town", [world.property],
    )  # fmt: skip
    emptied = await app_client.post(
        f"/app/catalogue/groups/{group['id']}",
        data={"csrf": csrf, "name": "Porto centre", "kind": "region"},
    )
    assert emptied.status_code == 303
    assert (await world.portal.get(f"/v1/groups/{group['id']}")).json()["propertyIds"] == []


async def test_laundries_and_price_lists_are_made_and_edited(
    app_client: AsyncClient, world: World
) -> None:
    await web_sign_in(app_client, "admin")
    form = await app_client.get("/app/laundries/new")
    csrf = csrf_of(form.text)
    made = await app_client.post(
        "/app/laundries",
        data={"csrf": csrf, "name": "Lavanda", "contactName": "Rui", "email": "rui@lavanda.test",
              "phone": "+351 22 000", "city": "Porto", "countryCode": "pt", "vatId": "PT123",
              "active": "1"},
    )  # fmt: skip
    assert made.status_code == 303, made.text
    laundry_id = int(made.headers["location"].rsplit("/", 1)[1])
    api = (await world.portal.get(f"/v1/laundries/{laundry_id}")).json()
    assert (api["contactName"], api["address"]["countryCode"], api["active"]) == (
        "Rui", "PT", True,
    )  # fmt: skip
    edit = await app_client.get(f"/app/laundries/{laundry_id}/edit")
    assert 'value="rui@lavanda.test"' in edit.text
    bad_email = await app_client.post(
        f"/app/laundries/{laundry_id}", data={"csrf": csrf, "name": "Lavanda", "email": "no"}
    )
    assert bad_email.status_code == 400
    paused = await app_client.post(
        f"/app/laundries/{laundry_id}", data={"csrf": csrf, "name": "Lavanda Porto"}
    )
    assert paused.status_code == 303
    api = (await world.portal.get(f"/v1/laundries/{laundry_id}")).json()
    assert (api["name"], api["active"]) == ("Lavanda Porto", False)

    prices = await app_client.get(f"/app/laundries/{laundry_id}/prices/new")
    assert f'name="price_{world.towel}"' in prices.text
    created = await app_client.post(
        f"/app/laundries/{laundry_id}/prices",
        data={"csrf": csrf, "name": "2026", "currency": "eur", "validFrom": "2026-01-01",
              "validTo": "2026-12-31", "perKg": "2.80", "deliveryFee": "5",
              "lateOrderSurcharge": "",
              f"price_{world.duvet}": "2,75", f"lost_{world.duvet}": "40.00",
              f"price_{world.towel}": ""},
    )  # fmt: skip
    assert created.status_code == 303, created.text
    (row,) = (await world.portal.get(f"/v1/laundries/{laundry_id}/price-lists")).json()["data"]
    assert (row["currency"], row["perKg"], row["deliveryFee"], row["lateOrderSurcharge"]) == (
        "EUR", 280, 500, 0,
    )  # fmt: skip
    assert row["items"] == [{"itemTypeId": world.duvet, "unitPrice": 275, "lostItemPrice": 4000}]
    detail = await app_client.get(f"/app/laundries/{laundry_id}")
    assert "2.75 EUR" in detail.text
    assert "40.00 EUR" in detail.text
    overlapping = await app_client.post(
        f"/app/laundries/{laundry_id}/prices",
        data={"csrf": csrf, "currency": "EUR", "validFrom": "2026-06-01"},
    )
    assert overlapping.status_code == 409
    for bad in ({"validFrom": "June"}, {"validFrom": "2026-01-01", "deliveryFee": "5.555"}):
        refused = await app_client.post(
            f"/app/laundries/{laundry_id}/prices", data={"csrf": csrf, "currency": "USD", **bad}
        )
        assert refused.status_code == 400, bad
    edit_form = await app_client.get(f"/app/laundries/{laundry_id}/prices/{row['id']}/edit")
    assert (
        f'name="price_{world.duvet}" aria-label="Duvet cover double unit price" value="2.75"'
        in (edit_form.text)
    )
    replaced = await app_client.post(
        f"/app/laundries/{laundry_id}/prices/{row['id']}",
        data={"csrf": csrf, "currency": "EUR", "validFrom": "2026-01-01",
              f"price_{world.towel}": "1.10"},
    )  # fmt: skip
    assert replaced.status_code == 303
    (row,) = (await world.portal.get(f"/v1/laundries/{laundry_id}/price-lists")).json()["data"]
    assert (row["perKg"], row["validTo"], row["items"]) == (
        None, None, [{"itemTypeId": world.towel, "unitPrice": 110, "lostItemPrice": None}],
    )  # fmt: skip
    deleted = await app_client.post(
        f"/app/laundries/{laundry_id}/prices/{row['id']}/delete",
        data={"csrf": csrf, "confirmed": "yes"},
    )
    assert deleted.status_code == 303
    assert (await world.portal.get(f"/v1/laundries/{laundry_id}/price-lists")).json()["data"] == []


async def test_vault_entries_are_added_rotated_and_deleted(
    app_client: AsyncClient, world: World
) -> None:
    await web_sign_in(app_client, "admin")
    detail = await app_client.get(f"/app/properties/{world.property}")
    assert f"/app/vault/new?owner=property:{world.property}" in detail.text
    form = await app_client.get("/app/vault/new", params={"owner": f"property:{world.property}"})
    assert f'value="property:{world.property}" selected' in form.text
    csrf = csrf_of(form.text)
    made = await app_client.post(
        "/app/vault",
        data={"csrf": csrf, "owner": f"property:{world.property}", "kind": "door-code",
              "label": "Front door", "secret": "2580", "validFrom": "2026-01-01"},
    )  # fmt: skip
    assert made.status_code == 303, made.text
    entry_id = int(made.headers["location"].rsplit("/", 1)[1])
    page = await app_client.get(made.headers["location"])
    assert "2580" not in page.text
    edit = await app_client.get(f"/app/vault/{entry_id}/edit")
    assert "2580" not in edit.text  # a form never carries the secret
    kept = await app_client.post(
        f"/app/vault/{entry_id}",
        data={"csrf": csrf, "kind": "door-code", "label": "Front door (main)", "secret": ""},
    )
    assert kept.status_code == 303
    api = (await world.portal.get(f"/v1/vault/{entry_id}")).json()
    assert (api["label"], api["rotatedAt"], api["validFrom"]) == ("Front door (main)", None, None)
    revealed = await world.portal.post(f"/v1/vault/{entry_id}/reveal")
    assert revealed.json()["secret"] == "2580"
    rotated = await app_client.post(
        f"/app/vault/{entry_id}",
        data={"csrf": csrf, "kind": "door-code", "label": "Front door (main)", "secret": "9999"},
    )
    assert rotated.status_code == 303
    assert (await world.portal.get(f"/v1/vault/{entry_id}")).json()["rotatedAt"] is not None
    assert (await world.portal.post(f"/v1/vault/{entry_id}/reveal")).json()["secret"] == "9999"
    group = await world.portal.made("/v1/groups", {"name": "All", "kind": "portfolio"})
    for owner, status in (("", 400), ("property:999999", 400), (f"group:{group['id']}", 303)):
        answer = await app_client.post(
            "/app/vault",
            data={"csrf": csrf, "owner": owner, "kind": "wifi", "label": "Wifi", "secret": "pw"},
        )
        assert answer.status_code == status, owner
    gone = await app_client.post(
        f"/app/vault/{entry_id}/delete", data={"csrf": csrf, "confirmed": "yes"}
    )
    assert gone.status_code == 303
    assert gone.headers["location"] == f"/app/properties/{world.property}"
    assert (await world.portal.get(f"/v1/vault/{entry_id}")).status_code == 404


async def test_an_admin_records_an_invoice_by_hand(app_client: AsyncClient, world: World) -> None:
    first = await world.delivered("2026-01-10")
    second = await world.delivered("2026-01-17")
    await web_sign_in(app_client, "admin")
    form = await app_client.get("/app/invoices/new")
    assert first["number"] in form.text
    assert second["number"] in form.text
    csrf = csrf_of(form.text)
    fields = {"csrf": csrf, "laundryId": str(world.laundry), "invoiceNumber": "P-2026-01",
              "invoiceDate": "2026-01-31", "currency": "EUR", "net": "30.00", "tax": "6.90",
              f"sheet_{first['id']}": "24.00", "otherDescription": "Lost towel",
              "otherNet": "6.00"}  # fmt: skip
    pdf = {"file": ("paper.pdf", make_pdf("P-2026-01"), "application/pdf")}
    mismatch = await app_client.post("/app/invoices", data={**fields, "net": "31.00"}, files=pdf)
    assert mismatch.status_code == 400
    not_pdf = {"file": ("paper.pdf", b"hello", "application/pdf")}
    assert (await app_client.post("/app/invoices", data=fields, files=not_pdf)).status_code == 415
    assert (await app_client.post("/app/invoices", data=fields)).status_code == 400  # no file
    recorded = await app_client.post("/app/invoices", data=fields, files=pdf)
    assert recorded.status_code == 303, recorded.text
    invoice_id = int(recorded.headers["location"].rsplit("/", 1)[1])
    api = (await world.portal.get(f"/v1/invoices/{invoice_id}")).json()
    assert (api["source"], api["gross"], api["status"]) == ("admin", 3690, "received")
    assert [(x["linenSheetId"], x["net"]) for x in api["lines"]] == [
        (first["id"], 2400), (None, 600),
    ]  # fmt: skip
    assert (await world.portal.get(f"/v1/sheets/{first['id']}")).json()["status"] == "invoiced"
    reconciled = await app_client.get("/app/invoices")
    waiting = reconciled.text.split('id="not-invoiced"')[1].split("</section>")[0]
    assert second["number"] in waiting
    assert first["number"] not in waiting
    unmatched = reconciled.text.split('id="without-sheet"')[1].split("</section>")[0]
    assert "Lost towel" in unmatched
    again = await app_client.post("/app/invoices", data=fields, files=pdf)
    assert again.status_code == 409  # the same number from the same laundry


async def test_the_statistics_filters_narrow_the_charts_and_the_csv(
    app_client: AsyncClient, world: World
) -> None:
    other = await world.portal.made(
        "/v1/properties",
        {"code": "HIL-02", "name": "Hill", "defaultLaundryId": world.laundry},
    )
    group = await world.portal.made(
        "/v1/groups", {"name": "Hills", "kind": "region", "propertyIds": [other["id"]]}
    )
    await world.confirmed("2026-01-10")  # SEA-01: 2 + 4 items
    sheet = await world.portal.made(
        "/v1/sheets",
        {"propertyId": other["id"], "serviceDate": "2026-01-12",
         "lines": [{"itemTypeId": world.towel, "qtyOrdered": 10}]},
    )  # fmt: skip
    assert (await world.portal.post(f"/v1/sheets/{sheet['id']}/confirm")).status_code == 200
    await web_sign_in(app_client, "user")
    span = {"groupBy": "month", "start": "2026-01-01", "end": "2026-01-31"}
    for narrowing, items in (({}, "16"), ({"propertyId": str(world.property)}, "6"),
                             ({"groupId": str(group["id"])}, "10"),
                             ({"laundryId": str(world.laundry)}, "16")):  # fmt: skip
        page = await app_client.get("/app/statistics", params={**span, **narrowing})
        assert page.status_code == 200
        chart = page.text.split('data-chart="Items"')[1].split("</svg>")[0]
        assert dict(re.findall(r'data-label="([^"]+)" data-value="([^"]+)"', chart)) == {
            "2026-01": items
        }, narrowing
    page = await app_client.get("/app/statistics", params={**span, "groupId": str(group["id"])})
    assert f'<option value="{group["id"]}" selected>Hills</option>' in page.text
    link = re.search(r'id="csv" href="([^"]+)"', page.text)
    assert link is not None
    exported = await app_client.get(link.group(1).replace("&amp;", "&"))
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert [(r["period"], r["items"]) for r in rows] == [("2026-01", "10")]
    bad = await app_client.get("/app/statistics", params={"propertyId": "x"})
    assert bad.status_code == 400
    backwards = await app_client.get(
        "/app/statistics", params={"start": "2026-02-01", "end": "2026-01-01"}
    )
    assert backwards.status_code == 400
    assert "end: must not be before start" in backwards.text  # the page's own names (0214)


async def test_read_only_roles_get_no_forms_and_their_posts_are_refused(
    app_client: AsyncClient, world: World
) -> None:
    entry = await world.portal.made(
        "/v1/vault", {"propertyId": world.property, "kind": "wifi", "label": "W", "secret": "s"}
    )
    group = await world.portal.made("/v1/groups", {"name": "G", "kind": "owner"})
    (prices,) = (await world.portal.get(f"/v1/laundries/{world.laundry}/price-lists")).json()[
        "data"
    ]
    laundry = f"/app/laundries/{world.laundry}"
    forms = [
        f"/app/catalogue/item-types/{world.duvet}/edit",
        f"/app/catalogue/groups/{group['id']}/edit",
        "/app/laundries/new", f"{laundry}/edit", f"{laundry}/prices/new",
        f"{laundry}/prices/{prices['id']}/edit", "/app/vault/new", f"/app/vault/{entry['id']}/edit",
        "/app/invoices/new",
    ]  # fmt: skip
    posts = [
        f"/app/catalogue/item-types/{world.duvet}", f"/app/catalogue/groups/{group['id']}",
        "/app/laundries", laundry, f"{laundry}/prices", f"{laundry}/prices/{prices['id']}",
        f"{laundry}/prices/{prices['id']}/delete", "/app/vault", f"/app/vault/{entry['id']}",
        f"/app/vault/{entry['id']}/delete", "/app/invoices",
    ]  # fmt: skip
    for number, username in enumerate(("power", "user")):
        await web_sign_in(app_client, username, switch=number > 0)
        for path in ("/app/catalogue", "/app/laundries", laundry, "/app/invoices",
                     f"/app/vault/{entry['id']}", f"/app/properties/{world.property}"):  # fmt: skip
            page = await app_client.get(path)
            assert page.status_code == 200, path
            assert "/edit" not in page.text, (username, path)
            assert "/new" not in page.text, (username, path)
        csrf = csrf_of(page.text)
        for path in forms:
            assert (await app_client.get(path)).status_code == 403, (username, path)
        for path in posts:
            refused = await app_client.post(path, data={"csrf": csrf, "name": "X", "code": "X"})
            assert refused.status_code == 403, (username, path)
    assert (await world.portal.get(f"/v1/vault/{entry['id']}")).status_code == 200
    assert len((await world.portal.get(f"/v1/laundries/{world.laundry}/price-lists")).json()[
        "data"
    ]) == 1  # fmt: skip


async def test_set_forms_offer_active_pieces_and_the_retired_ones_a_set_holds(
    app_client: AsyncClient, world: World
) -> None:
    """Decision 0523: a retired piece is not offered for a new set, and stays, marked, in the
    form of a set that holds it; saving that form unchanged keeps it."""
    portal = world.portal
    kit = await portal.made(
        "/v1/item-types",
        {"code": "KIT", "name": "Kit", "category": "bed", "unit": "set",
         "components": [{"itemTypeId": world.duvet, "qty": 1}]},
    )  # fmt: skip
    napkin = await portal.made("/v1/item-types", NAPKIN)
    await portal.retire(world.duvet, napkin["id"])
    await web_sign_in(app_client, "admin")
    listed = await app_client.get("/app/catalogue")
    assert offered(listed.text, "part_") == {world.towel}
    form = await app_client.get(f"/app/catalogue/item-types/{kit['id']}/edit")
    assert offered(form.text, "part_") == {world.towel, world.duvet}
    marked = f'Duvet cover double (retired) <input type="number" min="0" name="part_{world.duvet}"'
    assert marked in form.text
    fields = {"csrf": csrf_of(form.text), "code": "KIT", "name": "Kit", "category": "bed",
              "active": "1", f"part_{world.duvet}": "1", f"part_{world.towel}": "2"}  # fmt: skip
    saved = await app_client.post(f"/app/catalogue/item-types/{kit['id']}", data=fields)
    assert saved.status_code == 303, saved.text
    refused = await app_client.post(
        f"/app/catalogue/item-types/{kit['id']}", data={**fields, f"part_{napkin['id']}": "1"}
    )
    assert refused.status_code == 409
    api = (await portal.get(f"/v1/item-types/{kit['id']}")).json()
    assert sorted((c["itemTypeId"], c["qty"]) for c in api["components"]) == sorted(
        [(world.duvet, 1), (world.towel, 2)]
    )
