"""Two tenants with overlapping data walk every route: each host serves only its own."""

from __future__ import annotations

import re

from httpx import AsyncClient

from tests.factories import TenantFixture
from tests.linen.helpers import Portal, World, invoice_meta


async def _populate(world: World) -> dict[str, int]:
    portal = world.portal
    group = await portal.made(
        "/v1/groups", {"name": "Coast", "kind": "region", "propertyIds": [world.property]}
    )
    sheet = await world.delivered()
    invoice = (await world.upload(invoice_meta("INV-1", [sheet["id"]]))).json()
    entry = await portal.made(
        "/v1/vault", {"propertyId": world.property, "kind": "alarm", "label": "A", "secret": "1"}
    )
    keys = (await portal.get(f"/v1/laundries/{world.laundry}/keys")).json()["data"]
    prices = (await portal.get(f"/v1/laundries/{world.laundry}/price-lists")).json()["data"]
    return {
        "property_id": world.property,
        "group_id": group["id"],
        "item_type_id": world.duvet,
        "laundry_id": world.laundry,
        "key_id": keys[0]["id"],
        "price_list_id": prices[0]["id"],
        "sheet_id": sheet["id"],
        "job_id": sheet["id"],
        "invoice_id": invoice["id"],
        "entry_id": entry["id"],
    }


async def test_two_tenants_walk_every_route(
    app_client: AsyncClient, acme: TenantFixture, globex: TenantFixture
) -> None:
    acme_world = await (await Portal.open(app_client, acme)).world()
    globex_world = await (await Portal.open(app_client, globex)).world()
    acme_ids = await _populate(acme_world)
    globex_ids = await _populate(globex_world)
    # Same codes, names and invoice numbers on both sides; the ids differ.
    assert acme_ids != globex_ids
    document = (await app_client.get("/api/openapi.json")).json()
    walked = 0
    for template, item in document["paths"].items():
        names = re.findall(r"{(\w+)}", template)
        if not names:
            continue
        for method in item:
            path = template
            for name in names:
                path = path.replace(f"{{{name}}}", str(acme_ids[name]))
            laundry = template.startswith("/laundry")
            headers = (
                globex_world.laundry_headers()
                if laundry
                else await globex_world.portal.auth("admin")
            )
            body = {"reason": "x", "lines": [{"itemTypeId": 1, "qtyDelivered": 1}]}
            response = await app_client.request(
                method.upper(), f"/api{path}", headers=headers,
                json=body if method in ("post", "patch", "put") else None,
            )  # fmt: skip
            walked += 1
            if response.status_code != 404:
                # Only a body that fails validation first may answer otherwise, and never 2xx.
                assert response.status_code == 400, (method, path, response.text)
    assert walked >= 30
    # Lists on globex's host never show acme's rows.
    for path, name in (
        ("/v1/properties", "property_id"), ("/v1/sheets", "sheet_id"),
        ("/v1/invoices", "invoice_id"), ("/v1/vault", "entry_id"), ("/v1/groups", "group_id"),
    ):  # fmt: skip
        rows = (await globex_world.portal.get(path)).json()["data"]
        assert [r["id"] for r in rows] == [globex_ids[name]], path
    stats = (
        await globex_world.portal.get(
            "/v1/statistics", groupBy="property", **{"from": "2026-01-01", "to": "2026-12-31"}
        )
    ).json()
    assert [r["key"] for r in stats["data"]] == [str(globex_ids["property_id"])]
    # A laundry key works only on its own tenant's host.
    wrong_host = dict(acme_world.laundry_headers(), Host=globex.host)
    assert (await app_client.get("/api/laundry/jobs", headers=wrong_host)).status_code == 401
    # Acme's objects are untouched by globex's attempts.
    sheet = (await acme_world.portal.get(f"/v1/sheets/{acme_ids['sheet_id']}")).json()
    assert sheet["status"] == "invoiced"
    invoice = (await acme_world.portal.get(f"/v1/invoices/{acme_ids['invoice_id']}")).json()
    assert invoice["status"] == "received"
