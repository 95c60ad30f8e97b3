"""The laundry and statistics pages over HTTP: keys shown once, rotated and revoked; the chart's
totals and the CSV."""

from __future__ import annotations

import csv
import io
import re

from httpx import AsyncClient

from tests.console.signin import csrf_of
from tests.linen.helpers import World
from tests.linen.web.test_pages_http import web_sign_in


async def test_laundry_keys_are_shown_once_rotated_and_revoked(
    app_client: AsyncClient, world: World
) -> None:
    await web_sign_in(app_client, "admin")
    page = await app_client.get(f"/app/laundries/{world.laundry}")
    assert "Duvet cover double" in page.text  # the price list names its item types
    assert "2.50 EUR" in page.text
    issued = await app_client.post(
        f"/app/laundries/{world.laundry}/keys", data={"csrf": csrf_of(page.text), "name": "van 2"}
    )
    assert issued.status_code == 303
    shown = await app_client.get(issued.headers["location"])
    key = re.search(r"data-secret>([^<]+)<", shown.text)
    assert key is not None
    jobs = await app_client.get("/api/laundry/jobs", headers=world.laundry_headers(key.group(1)))
    assert jobs.status_code == 200
    again = await app_client.get(f"/app/laundries/{world.laundry}")
    assert key.group(1) not in again.text  # shown once
    assert "never" in again.text  # the first key was not used yet
    key_id = re.findall(r"/keys/(\d+)/rotate", again.text)[-1]
    rotating = await app_client.post(
        f"/app/laundries/{world.laundry}/keys/{key_id}/rotate", data={"csrf": csrf_of(again.text)}
    )
    assert rotating.status_code == 303
    rotated = await app_client.get(rotating.headers["location"])
    fresh = re.search(r"data-secret>([^<]+)<", rotated.text)
    assert fresh is not None
    assert fresh.group(1) != key.group(1)
    old = await app_client.get("/api/laundry/jobs", headers=world.laundry_headers(key.group(1)))
    assert old.status_code == 401
    new_id = re.findall(r"/keys/(\d+)/revoke", rotated.text)[-1]
    revoked = await app_client.post(
        f"/app/laundries/{world.laundry}/keys/{new_id}/revoke",
        data={"csrf": csrf_of(again.text), "confirmed": "yes"},
    )
    assert revoked.status_code == 303
    gone = await app_client.get("/api/laundry/jobs", headers=world.laundry_headers(fresh.group(1)))
    assert gone.status_code == 401
    await web_sign_in(app_client, "user", switch=True)
    read_only = await app_client.get(f"/app/laundries/{world.laundry}")
    assert "/rotate" not in read_only.text
    assert 'id="new-key"' not in read_only.text


async def test_the_statistics_chart_shows_the_totals(app_client: AsyncClient, world: World) -> None:
    await world.delivered("2026-01-10")  # 2 duvets + 4 towels delivered
    await world.confirmed("2026-02-03")  # 2 + 4 ordered
    await world.confirmed("2026-02-04")
    await web_sign_in(app_client, "user")
    page = await app_client.get(
        "/app/statistics", params={"groupBy": "month", "start": "2026-01-01", "end": "2026-02-28"}
    )
    assert page.status_code == 200
    items = page.text.split('data-chart="Items"')[1].split("</svg>")[0]
    bars = dict(re.findall(r'data-label="([^"]+)" data-value="([^"]+)"', items))
    assert bars == {"2026-01": "6", "2026-02": "12"}
    cost = page.text.split('data-chart="Estimated cost"')[1].split("</svg>")[0]
    # January: 2 duvets at 2.50 + 4 towels by weight (2 kg at 3.00) + 5.00 delivery fee.
    assert 'data-label="2026-01" data-value="16.00 EUR"' in cost
    exported = await app_client.get(
        "/app/statistics.csv",
        params={"groupBy": "month", "start": "2026-01-01", "end": "2026-02-28"},
    )
    assert exported.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert [(r["period"], r["sheets"], r["items"]) for r in rows] == [
        ("2026-01", "1", "6"),
        ("2026-02", "2", "12"),
    ]


async def test_an_admin_creates_and_edits_a_property(app_client: AsyncClient, world: World) -> None:
    group = await world.portal.made("/v1/groups", {"name": "Porto", "kind": "region"})
    await web_sign_in(app_client, "admin")
    form = await app_client.get("/app/properties/new")
    assert form.status_code == 200, form.text[-1500:]
    csrf = csrf_of(form.text)
    made = await app_client.post(
        "/app/properties",
        data={"csrf": csrf, "code": "RIV-02", "name": "Riverside", "city": "Porto",
              "countryCode": "PT", "defaultLaundryId": str(world.laundry),
              "groupIds": str(group["id"]), "deliveryNote": "Reception desk",
              "bed_double": "1", "bed_single": "2", f"par_{world.towel}": "6", "active": "1"},
    )  # fmt: skip
    assert made.status_code == 303, made.text
    prop_id = int(made.headers["location"].rsplit("/", 1)[1])
    api = (await world.portal.get(f"/v1/properties/{prop_id}")).json()
    assert api["linenPar"] == [{"itemTypeId": world.towel, "qty": 6}]
    assert api["groupIds"] == [group["id"]]
    assert {b["bedType"]: b["count"] for b in api["beds"]} == {"double": 1, "single": 2}
    listed = await app_client.get("/app/properties", params={"group": str(group["id"])})
    assert "RIV-02" in listed.text
    assert "SEA-01" not in listed.text
    searched = await app_client.get("/app/properties", params={"q": "sea"})
    assert "SEA-01" in searched.text
    assert "RIV-02" not in searched.text
    edited = await app_client.post(
        f"/app/properties/{prop_id}",
        data={"csrf": csrf, "code": "RIV-02", "name": "Riverside Flat", "countryCode": "PT",
              f"par_{world.towel}": "8", f"par_{world.duvet}": "2", "active": "1"},
    )  # fmt: skip
    assert edited.status_code == 303
    detail = await app_client.get(f"/app/properties/{prop_id}")
    assert "Riverside Flat" in detail.text
    api = (await world.portal.get(f"/v1/properties/{prop_id}")).json()
    assert sorted((p["itemTypeId"], p["qty"]) for p in api["linenPar"]) == sorted(
        [(world.towel, 8), (world.duvet, 2)]
    )
    duplicate = await app_client.post(
        "/app/properties", data={"csrf": csrf, "code": "RIV-02", "name": "Again"}
    )
    assert duplicate.status_code == 409
    assert "Something is wrong" in duplicate.text


async def test_item_types_sets_and_groups(app_client: AsyncClient, world: World) -> None:
    await web_sign_in(app_client, "admin")
    page = await app_client.get("/app/catalogue")
    csrf = csrf_of(page.text)
    made = await app_client.post(
        "/app/catalogue/item-types",
        data={"csrf": csrf, "code": "SET_DOUBLE", "name": "Double bed set", "category": "bed",
              f"part_{world.duvet}": "1", f"part_{world.towel}": "0"},
    )  # fmt: skip
    assert made.status_code == 303, made.text
    grouped = await app_client.post(
        "/app/catalogue/groups",
        data={"csrf": csrf, "name": "Coast", "kind": "portfolio",
              "propertyIds": str(world.property)},
    )  # fmt: skip
    assert grouped.status_code == 303, grouped.text
    shown = await app_client.get("/app/catalogue")
    row = shown.text.split('data-code="SET_DOUBLE"')[1].split("</tr>")[0]
    assert "<td>set</td>" in row
    assert "1 \u00d7 Duvet cover double" in row
    assert "Coast" in shown.text
    assert "SEA-01" in shown.text.split('id="groups"')[1]
    kinds = (await world.portal.get("/v1/item-types")).json()["data"]
    assert [k["code"] for k in kinds if k["unit"] == "set"] == ["SET_DOUBLE"]
    await web_sign_in(app_client, "user", switch=True)
    read_only = await app_client.get("/app/catalogue")
    assert 'id="new-group"' not in read_only.text
    refused = await app_client.post(
        "/app/catalogue/groups",
        data={"csrf": csrf_of(read_only.text), "name": "X", "kind": "owner"},
    )
    assert refused.status_code == 403


async def test_the_catalogue_tells_retired_item_types_apart(
    app_client: AsyncClient, world: World
) -> None:
    retired = await world.portal.patch(f"/v1/item-types/{world.towel}", {"active": False})
    assert retired.status_code == 200
    for number, username in enumerate(("admin", "user")):
        await web_sign_in(app_client, username, switch=number > 0)
        page = await app_client.get("/app/catalogue")
        head = page.text.split('id="item-types"')[1].split("</thead>")[0]
        assert "<th>Active</th>" in head
        cells = dict(
            re.findall(r'data-code="(\w+)">.*?<td class="active">([^<]+)<', page.text, re.S)
        )
        assert cells == {"DUVET_COVER_DOUBLE": "yes", "TOWEL_BATH": "no (retired)"}, username
