"""The dates users enter lie from 2000-01-01 to 2099-12-31 (decision 0520): others are 400
naming the field and change nothing; the first and the last day work all the way through."""

from __future__ import annotations

import json
from typing import Any

from tests.linen.helpers import World, invoice_meta, make_pdf

OUTSIDE = ("0001-01-01", "1999-12-31", "2100-01-01", "9999-12-31")
RANGE = "must be a date from 2000-01-01 to 2099-12-31"


def _refused(response: Any, field: str) -> None:
    assert response.status_code == 400, response.text
    assert response.json() == {
        "error": "invalid_request",
        "error_description": f"{field}: {RANGE}",
    }


async def test_dates_outside_the_range_are_refused_naming_the_field(world: World) -> None:
    portal = world.portal
    draft = await world.sheet()
    prices = f"/v1/laundries/{world.laundry}/price-lists"
    price_list = (await portal.get(prices)).json()["data"][0]
    vault = await portal.made(
        "/v1/vault", {"propertyId": world.property, "kind": "wifi", "label": "Wi-Fi", "secret": "s"}
    )
    whole_list = {"currency": "EUR", "validFrom": "2026-01-01", "items": []}
    for day in OUTSIDE:
        sheet = {"propertyId": world.property, "serviceDate": "2026-02-01"}
        _refused(await portal.post("/v1/sheets", {**sheet, "serviceDate": day}), "serviceDate")
        _refused(await portal.post("/v1/sheets", {**sheet, "pickupDate": day}), "pickupDate")
        for field in ("serviceDate", "pickupDate"):
            _refused(await portal.patch(f"/v1/sheets/{draft['id']}", {field: day}), field)
        for field in ("validFrom", "validTo"):
            _refused(await portal.post(prices, {**whole_list, field: day}), field)
            _refused(
                await portal.put(f"{prices}/{price_list['id']}", {**whole_list, field: day}), field
            )
            entry = {"propertyId": world.property, "kind": "wifi", "label": "x", "secret": "s"}
            _refused(await portal.post("/v1/vault", {**entry, field: day}), field)
            _refused(await portal.patch(f"/v1/vault/{vault['id']}", {field: day}), field)
        for field in ("invoiceDate", "periodFrom", "periodTo"):
            upload = await world.upload({**invoice_meta("INV-1", []), field: day})
            _refused(upload, f"metadata: {field}")
            meta = {**invoice_meta("INV-2", []), "laundryId": world.laundry, field: day}
            by_hand = await portal.client.post(
                "/api/v1/invoices",
                files={
                    "file": ("inv.pdf", make_pdf(), "application/pdf"),
                    "metadata": (None, json.dumps(meta), "application/json"),
                },
                headers=await portal.auth("admin"),
            )
            _refused(by_hand, f"metadata: {field}")
    assert (await portal.get("/v1/sheets")).json()["total"] == 1
    unchanged = (await portal.get(f"/v1/sheets/{draft['id']}")).json()
    assert (unchanged["serviceDate"], unchanged["pickupDate"]) == ("2026-01-10", None)
    assert (await portal.get(prices)).json()["data"] == [price_list]
    assert (await portal.get(f"/v1/vault/{vault['id']}")).json()["validFrom"] is None
    assert (await portal.get("/v1/invoices")).json()["total"] == 0


async def test_the_first_and_last_day_are_taken_and_confirmed(world: World) -> None:
    """Confirming judges a late order by the days between confirmation and service: a sheet on
    the range's first day is late, one on its last is not, and neither is a 500."""
    portal = world.portal
    for day, late in (("2000-01-01", True), ("2099-12-31", False)):
        sheet = await world.sheet(day, pickupDate=day)
        confirmed = await portal.post(f"/v1/sheets/{sheet['id']}/confirm")
        assert confirmed.status_code == 200, confirmed.text
        assert (confirmed.json()["status"], confirmed.json()["lateOrder"]) == ("confirmed", late)
    kept = await portal.post(
        f"/v1/laundries/{world.laundry}/price-lists",
        {"currency": "USD", "validFrom": "2000-01-01", "validTo": "2099-12-31"},
    )
    assert kept.status_code == 201, kept.text
    document = (await portal.client.get("/api/openapi.json")).json()
    service_date = document["components"]["schemas"]["SheetCreate"]["properties"]["serviceDate"]
    assert service_date["description"] == "A date from 2000-01-01 to 2099-12-31"
    assert service_date["pattern"].startswith("^20[0-9]{2}-")
