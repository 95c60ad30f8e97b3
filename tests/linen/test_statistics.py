"""Statistics over HTTP: grouping by month, property, laundry and group; date filters."""

from __future__ import annotations

from typing import Any

from tests.linen.helpers import World, invoice_meta


async def _stats(world: World, **params: Any) -> list[dict[str, Any]]:
    response = await world.portal.get("/v1/statistics", "user", **params)
    assert response.status_code == 200, response.text
    rows: list[dict[str, Any]] = response.json()["data"]
    return rows


async def test_grouped_statistics(world: World) -> None:
    portal = world.portal
    second = await portal.made("/v1/properties", {"code": "HILL-02", "name": "Hill House"})
    await portal.made(
        "/v1/groups",
        {"name": "Portfolio A", "kind": "portfolio", "propertyIds": [world.property, second["id"]]},
    )
    jan = await world.delivered("2026-01-10")
    await world.confirmed("2026-01-20")
    await portal.made(
        "/v1/sheets",
        {"propertyId": second["id"], "laundryId": world.laundry, "serviceDate": "2026-02-03",
         "lines": [{"itemTypeId": world.duvet, "qtyOrdered": 3}]},
    )  # fmt: skip
    feb = (await portal.get("/v1/sheets", propertyId=second["id"])).json()["data"][0]
    await portal.post(f"/v1/sheets/{feb['id']}/confirm")
    cancelled = await world.sheet("2026-01-15")
    await portal.post(f"/v1/sheets/{cancelled['id']}/cancel")
    await world.sheet("2026-01-16")  # a draft: not counted
    await world.upload(invoice_meta("ST-1", [jan["id"]], unit=1234))
    period = {"from": "2026-01-01", "to": "2026-03-31"}

    months = await _stats(world, groupBy="month", **period)
    assert [(r["period"], r["sheets"]) for r in months] == [("2026-01", 2), ("2026-02", 1)]
    january = months[0]
    assert {i["code"]: i["qty"] for i in january["itemsByType"]} == {
        "DUVET_COVER_DOUBLE": 4, "TOWEL_BATH": 8,
    }  # fmt: skip
    assert january["weightKg"] == 7.6
    assert january["estimatedCost"] == [{"amount": 3200, "currency": "EUR"}]
    assert january["invoicedCost"] == [{"amount": 1234, "currency": "EUR"}]
    assert months[1]["invoicedCost"] == []

    by_property = await _stats(world, groupBy="property", **period)
    assert [(r["label"], r["sheets"]) for r in by_property] == [
        ("HILL-02 Hill House", 1), ("SEA-01 Sea View", 2),
    ]  # fmt: skip
    assert by_property[0]["period"] == "2026-01-01/2026-03-31"
    by_laundry = await _stats(world, groupBy="laundry", **period)
    assert [(r["key"], r["sheets"]) for r in by_laundry] == [(str(world.laundry), 3)]
    by_group = await _stats(world, groupBy="group", **period)
    assert [(r["label"], r["sheets"]) for r in by_group] == [("Portfolio A", 3)]
    only_feb = await _stats(world, groupBy="month", **{"from": "2026-02-01", "to": "2026-02-28"})
    assert [r["period"] for r in only_feb] == ["2026-02"]
    filtered = await _stats(world, groupBy="month", propertyId=second["id"], **period)
    assert [r["sheets"] for r in filtered] == [1]
    bad = await portal.get("/v1/statistics", groupBy="week")
    assert bad.status_code == 400
    backwards = await portal.get("/v1/statistics", **{"from": "2026-03-01", "to": "2026-01-01"})
    assert backwards.status_code == 400
    default = (await portal.get("/v1/statistics")).json()
    assert (default["dateFrom"], default["dateTo"]) == ("2025-02-01", "2026-01-01")
