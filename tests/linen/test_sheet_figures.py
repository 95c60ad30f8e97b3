"""A sheet's weight and estimate follow the price lists and item weights as they change, until
the sheet is invoiced or cancelled; the statistics, which sum them, agree."""

from __future__ import annotations

from typing import Any

from switchboard.kit.clock import ManualClock
from tests.linen.helpers import World, invoice_meta

PERIOD = {"from": "2026-01-01", "to": "2026-01-31"}


async def _figures(world: World, *sheets: dict[str, Any]) -> list[tuple[float, int | None]]:
    result = []
    for sheet in sheets:
        got = (await world.portal.get(f"/v1/sheets/{sheet['id']}")).json()
        cost = got["estimatedCost"]["amount"] if got["estimatedCost"] else None
        result.append((got["weightKg"], cost))
    return result


async def _statistics_agree(world: World) -> None:
    """The month's row sums the figures the counted sheets show."""
    counted = await world.portal.get("/v1/sheets", status="confirmed,delivered,invoiced", **PERIOD)
    sheets = counted.json()["data"]
    rows = (await world.portal.get("/v1/statistics", groupBy="month", **PERIOD)).json()["data"]
    assert rows[0]["sheets"] == len(sheets)
    assert rows[0]["weightKg"] == round(sum(s["weightKg"] for s in sheets), 3)
    costs = [s["estimatedCost"]["amount"] for s in sheets if s["estimatedCost"]]
    assert rows[0]["estimatedCost"] == (
        [{"amount": sum(costs), "currency": "EUR"}] if costs else []
    )


async def test_price_lists_and_weights_reach_the_open_sheets(
    world: World, clock: ManualClock
) -> None:
    portal = world.portal
    prices = f"/v1/laundries/{world.laundry}/price-lists"
    price_list = (await portal.get(prices)).json()["data"][0]
    draft = await world.sheet("2026-01-10")
    delivered = await world.delivered("2026-01-11")
    invoiced = await world.delivered("2026-01-12")
    cancelled = await world.sheet("2026-01-13")
    await portal.post(f"/v1/sheets/{cancelled['id']}/cancel", {"reason": "guest left"})
    assert (await world.upload(invoice_meta("INV-1", [invoiced["id"]]))).status_code == 201
    # 2 duvets x 250 + 4 towels x 0.5 kg x 300/kg + delivery fee 500
    before = (3.8, 500 + 600 + 500)
    assert await _figures(world, draft, delivered, invoiced, cancelled) == [before] * 4
    seen = (await portal.get(f"/v1/sheets/{draft['id']}")).json()["updatedAt"]
    await _statistics_agree(world)

    clock.advance(60)
    dearer = {**price_list, "perKg": 600, "items": [{"itemTypeId": world.duvet, "unitPrice": 400}]}
    assert (await portal.put(f"{prices}/{price_list['id']}", dearer)).status_code == 200
    now = (3.8, 800 + 1200 + 500)
    assert await _figures(world, draft, delivered, invoiced, cancelled) == [
        now, now, before, before,
    ]  # fmt: skip
    # The change shows to those who poll by updatedAt, the laundry included.
    changed = (await portal.get(f"/v1/sheets/{draft['id']}")).json()["updatedAt"]
    assert changed > seen
    polled = await portal.client.get(
        "/api/laundry/jobs", params={"updatedSince": changed}, headers=world.laundry_headers()
    )
    assert [job["id"] for job in polled.json()["data"]] == [delivered["id"]]
    await _statistics_agree(world)

    heavier = await portal.patch(f"/v1/item-types/{world.towel}", {"weightGrams": 1000})
    assert heavier.status_code == 200
    now = (5.8, 800 + 2400 + 500)
    assert await _figures(world, draft, delivered, invoiced, cancelled) == [
        now, now, before, before,
    ]  # fmt: skip
    await _statistics_agree(world)

    assert (await portal.delete(f"{prices}/{price_list['id']}")).status_code == 200
    assert await _figures(world, draft, delivered, invoiced) == [(5.8, None), (5.8, None), before]
    await _statistics_agree(world)
    per_kg_only = {"currency": "EUR", "validFrom": "2026-01-11", "perKg": 100, "items": []}
    assert (await portal.post(prices, per_kg_only)).status_code == 201
    # In force from the 11th: the draft of the 10th stays without a price list.
    assert await _figures(world, draft, delivered) == [(5.8, None), (5.8, 580)]
    await _statistics_agree(world)


async def test_a_refused_price_list_change_leaves_the_sheets_alone(world: World) -> None:
    portal = world.portal
    prices = f"/v1/laundries/{world.laundry}/price-lists"
    price_list = (await portal.get(prices)).json()["data"][0]
    sheet = await world.confirmed("2026-01-10")
    broken = {**price_list, "items": [{"itemTypeId": 999, "unitPrice": 1}]}
    refused = await portal.put(f"{prices}/{price_list['id']}", broken)
    assert (refused.status_code, refused.json()["error"]) == (400, "unknown_reference")
    assert await _figures(world, sheet) == [(3.8, 1600)]
