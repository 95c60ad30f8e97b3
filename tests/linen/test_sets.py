"""Sets in a sheet's weight and estimate: a set the price list does not name costs what its
components do, a set of no weight of its own weighs what they do; the figures follow a
component's price and weight, and the statistics sum them (decision 0516)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.kit.clock import ManualClock
from switchboard.linen.demo import create_demo_linen
from switchboard.linen.item_types.models import ItemType
from switchboard.linen.laundries.models import PriceList
from switchboard.linen.sheets import service as sheets
from switchboard.linen.sheets.models import SheetLine
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.linen.helpers import Portal, World, invoice_meta

PERIOD = {"from": "2026-01-01", "to": "2026-01-31"}
# duvet cover 900 g at 250 (the world's), sheet 600 g at 180, pillowcase 150 g at 60; the set
# is 1 + 1 + 2 of them: 550 a set, 1.8 kg a set.
PRICED = {"SHEET_DOUBLE": 180, "PILLOWCASE": 60}


async def _bed_set(world: World) -> dict[str, int]:
    """Two more pieces, the set made of them and the world's duvet cover, and a price list
    that prices the pieces but not the set."""
    portal = world.portal
    ids = {"DUVET_COVER_DOUBLE": world.duvet}
    for code, grams in (("SHEET_DOUBLE", 600), ("PILLOWCASE", 150)):
        made = await portal.made(
            "/v1/item-types",
            {"code": code, "name": code.title(), "category": "bed", "weightGrams": grams},
        )
        ids[code] = made["id"]
    bed_set = await portal.made(
        "/v1/item-types",
        {"code": "SET_DOUBLE", "name": "Double bed set", "category": "bed", "unit": "set",
         "components": [{"itemTypeId": ids["DUVET_COVER_DOUBLE"], "qty": 1},
                        {"itemTypeId": ids["SHEET_DOUBLE"], "qty": 1},
                        {"itemTypeId": ids["PILLOWCASE"], "qty": 2}]},
    )  # fmt: skip
    ids["SET_DOUBLE"] = bed_set["id"]
    await _prices(world, {"DUVET_COVER_DOUBLE": 250, **PRICED}, ids)
    return ids


async def _prices(world: World, unit_prices: dict[str, int], ids: dict[str, int]) -> None:
    """Replace the world's price list's items (per kg 300, delivery fee 500 stay)."""
    prices = f"/v1/laundries/{world.laundry}/price-lists"
    price_list = (await world.portal.get(prices)).json()["data"][0]
    items = [{"itemTypeId": ids[code], "unitPrice": p} for code, p in unit_prices.items()]
    replaced = await world.portal.put(
        f"{prices}/{price_list['id']}", {**price_list, "items": items}
    )
    assert replaced.status_code == 200, replaced.text


async def _sets_sheet(world: World, ids: dict[str, int], service_date: str) -> dict[str, Any]:
    return await world.portal.made(
        "/v1/sheets",
        {"propertyId": world.property, "serviceDate": service_date,
         "lines": [{"itemTypeId": ids["SET_DOUBLE"], "qtyOrdered": 2}]},
    )  # fmt: skip


async def _figures(world: World, *sheets_: dict[str, Any]) -> list[tuple[float, int | None]]:
    result = []
    for sheet in sheets_:
        got = (await world.portal.get(f"/v1/sheets/{sheet['id']}")).json()
        cost = got["estimatedCost"]["amount"] if got["estimatedCost"] else None
        result.append((got["weightKg"], cost))
    return result


async def _month(world: World) -> dict[str, Any]:
    rows = (await world.portal.get("/v1/statistics", groupBy="month", **PERIOD)).json()["data"]
    assert len(rows) == 1
    row: dict[str, Any] = rows[0]
    return row


async def test_a_set_without_a_price_costs_and_weighs_its_components(world: World) -> None:
    portal = world.portal
    ids = await _bed_set(world)
    draft = await _sets_sheet(world, ids, "2026-01-10")
    confirmed = await _sets_sheet(world, ids, "2026-01-11")
    assert (await portal.post(f"/v1/sheets/{confirmed['id']}/confirm")).status_code == 200
    # 2 sets x (250 + 180 + 2 x 60) + delivery fee 500; 2 x (900 + 600 + 2 x 150) g
    assert await _figures(world, draft, confirmed) == [(3.6, 1600)] * 2
    month = await _month(world)
    assert (month["sheets"], month["weightKg"]) == (1, 3.6)
    assert month["estimatedCost"] == [{"amount": 1600, "currency": "EUR"}]
    # Items count what was ordered: the set, not its pieces (the packing list expands it).
    assert month["itemsByType"] == [{"itemTypeId": ids["SET_DOUBLE"], "code": "SET_DOUBLE",
                                     "qty": 2}]  # fmt: skip
    # The laundry sees what a set weighs and what it is made of.
    job = await portal.client.get(
        f"/api/laundry/jobs/{confirmed['id']}", headers=world.laundry_headers()
    )
    (kind,) = job.json()["itemTypes"]
    assert (job.json()["weightKg"], kind["unit"], kind["weightGrams"]) == (3.6, "set", 1800)
    assert kind["components"] == [
        {"itemTypeId": ids[code], "code": code, "name": name, "qty": qty}
        for code, name, qty in (("DUVET_COVER_DOUBLE", "Duvet cover double", 1),
                                ("SHEET_DOUBLE", "Sheet_Double", 1),
                                ("PILLOWCASE", "Pillowcase", 2))
    ]  # fmt: skip

    # A price row for the set is the laundry's price for it: it wins over the components.
    await _prices(world, {"DUVET_COVER_DOUBLE": 250, **PRICED, "SET_DOUBLE": 450}, ids)
    assert await _figures(world, draft, confirmed) == [(3.6, 2 * 450 + 500)] * 2
    # So does the set's own weight, when it has one.
    heavier = await portal.patch(f"/v1/item-types/{ids['SET_DOUBLE']}", {"weightGrams": 2000})
    assert heavier.status_code == 200, heavier.text
    assert await _figures(world, draft, confirmed) == [(4.0, 1400)] * 2
    month = await _month(world)
    assert (month["weightKg"], month["estimatedCost"]) == (
        4.0, [{"amount": 1400, "currency": "EUR"}],
    )  # fmt: skip


async def test_a_components_price_and_weight_reach_the_open_sheets_holding_the_set(
    world: World, clock: ManualClock
) -> None:
    portal = world.portal
    ids = await _bed_set(world)
    draft = await _sets_sheet(world, ids, "2026-01-10")
    confirmed = await _sets_sheet(world, ids, "2026-01-11")
    assert (await portal.post(f"/v1/sheets/{confirmed['id']}/confirm")).status_code == 200
    cancelled = await _sets_sheet(world, ids, "2026-01-12")
    await portal.post(f"/v1/sheets/{cancelled['id']}/cancel", {"reason": "stay shortened"})
    invoiced = await _sets_sheet(world, ids, "2026-01-13")
    await portal.post(f"/v1/sheets/{invoiced['id']}/confirm")
    reported = await portal.post(
        f"/v1/sheets/{invoiced['id']}/delivery",
        {"lines": [{"itemTypeId": ids["SET_DOUBLE"], "qtyDelivered": 2, "qtyCollected": 2}]},
    )
    assert reported.status_code == 200, reported.text
    assert (await world.upload(invoice_meta("INV-S", [invoiced["id"]]))).status_code == 201
    assert await _figures(world, draft, confirmed, cancelled, invoiced) == [(3.6, 1600)] * 4

    # A dearer pillowcase: each set costs 2 x 40 more.
    await _prices(world, {"DUVET_COVER_DOUBLE": 250, "SHEET_DOUBLE": 180, "PILLOWCASE": 100}, ids)
    assert await _figures(world, draft, confirmed) == [(3.6, 1760)] * 2
    # A heavier pillowcase: the sheets hold no pillowcase line, only the set.
    seen = (await portal.get(f"/v1/sheets/{draft['id']}")).json()["updatedAt"]
    clock.advance(60)
    heavier = await portal.patch(f"/v1/item-types/{ids['PILLOWCASE']}", {"weightGrams": 250})
    assert heavier.status_code == 200, heavier.text
    assert await _figures(world, draft, confirmed) == [(4.0, 1760)] * 2
    assert (await portal.get(f"/v1/sheets/{draft['id']}")).json()["updatedAt"] > seen
    month = await _month(world)  # the confirmed sheet as it is now, the invoiced as it was
    assert (month["sheets"], month["weightKg"]) == (2, 7.6)
    assert month["estimatedCost"] == [{"amount": 1760 + 1600, "currency": "EUR"}]
    # Another make-up of the set: one pillowcase.
    fewer = await portal.patch(
        f"/v1/item-types/{ids['SET_DOUBLE']}",
        {"components": [{"itemTypeId": ids["DUVET_COVER_DOUBLE"], "qty": 1},
                        {"itemTypeId": ids["SHEET_DOUBLE"], "qty": 1},
                        {"itemTypeId": ids["PILLOWCASE"], "qty": 1}]},
    )  # fmt: skip
    assert fewer.status_code == 200, fewer.text
    assert await _figures(world, draft, confirmed) == [(3.5, 2 * 530 + 500)] * 2
    # Closed sheets keep the figures they had (decision 0513).
    assert await _figures(world, cancelled, invoiced) == [(3.6, 1600)] * 2


async def test_an_unpriced_component_is_costed_as_an_unpriced_piece(world: World) -> None:
    portal = world.portal
    ids = await _bed_set(world)
    draft = await _sets_sheet(world, ids, "2026-01-10")
    # The pillowcase leaves the price list: by weight at the per-kg rate (0.15 kg x 300).
    await _prices(world, {"DUVET_COVER_DOUBLE": 250, "SHEET_DOUBLE": 180}, ids)
    assert await _figures(world, draft) == [(3.6, 2 * (250 + 180 + 2 * 45) + 500)]
    # Without a per-kg rate an unpriced piece costs nothing, in a set as on its own.
    prices = f"/v1/laundries/{world.laundry}/price-lists"
    price_list = (await portal.get(prices)).json()["data"][0]
    no_per_kg = await portal.put(f"{prices}/{price_list['id']}", {**price_list, "perKg": None})
    assert no_per_kg.status_code == 200, no_per_kg.text
    assert await _figures(world, draft) == [(3.6, 2 * (250 + 180) + 500)]


async def test_a_set_weighed_as_a_bundle_is_costed_by_its_weight_where_pieces_are_not_priced(
    world: World,
) -> None:
    portal = world.portal
    ids = await _bed_set(world)
    bundle = await portal.patch(f"/v1/item-types/{ids['SET_DOUBLE']}", {"weightGrams": 2000})
    assert bundle.status_code == 200, bundle.text
    sheet = await _sets_sheet(world, ids, "2026-01-10")
    assert (await portal.post(f"/v1/sheets/{sheet['id']}/confirm")).status_code == 200
    # Every piece priced: the set costs its pieces' prices, whatever the bundle weighs.
    assert await _figures(world, sheet) == [(4.0, 2 * 550 + 500)]

    # A list by weight alone: the set costs its own 2 kg at 300 per kg, as a piece of 2 kg
    # would, so the estimate is the weight at the rate (its pieces weigh 1.8 kg).
    await _prices(world, {}, ids)
    assert await _figures(world, sheet) == [(4.0, 2 * 600 + 500)]
    month = await _month(world)
    assert (month["weightKg"], month["estimatedCost"]) == (
        4.0, [{"amount": 1700, "currency": "EUR"}],
    )  # fmt: skip

    # The pillowcases unpriced: what the priced pieces do not account for, 2000 - 900 - 600 g,
    # at the per-kg rate; a heavier priced piece leaves less of the bundle to it.
    await _prices(world, {"DUVET_COVER_DOUBLE": 250, "SHEET_DOUBLE": 180}, ids)
    assert await _figures(world, sheet) == [(4.0, 2 * (250 + 180 + 150) + 500)]
    heavier = await portal.patch(f"/v1/item-types/{ids['SHEET_DOUBLE']}", {"weightGrams": 700})
    assert heavier.status_code == 200, heavier.text
    assert await _figures(world, sheet) == [(4.0, 2 * (250 + 180 + 120) + 500)]

    # Back at 0 g the set weighs its pieces (900 + 700 + 2 x 150) and costs what they would.
    again = await portal.patch(f"/v1/item-types/{ids['SET_DOUBLE']}", {"weightGrams": 0})
    assert again.status_code == 200, again.text
    assert await _figures(world, sheet) == [(3.8, 2 * (250 + 180 + 2 * 45) + 500)]


async def test_the_demo_bed_set_is_estimated_and_weighed(
    portal: Portal, runtime: Runtime, acme: TenantFixture
) -> None:
    async with runtime.db.transaction() as session:
        await create_demo_linen(session, tenant_id=acme.id, clock=runtime.clock, box=runtime.box)
    kinds = {k["code"]: k for k in (await portal.get("/v1/item-types")).json()["data"]}
    bed_set = kinds["SET_DOUBLE"]
    assert (bed_set["unit"], bed_set["weightGrams"]) == ("set", 0)
    villa = next(
        p for p in (await portal.get("/v1/properties")).json()["data"] if p["code"] == "HILL-03"
    )
    drafts = (await portal.get("/v1/sheets", propertyId=villa["id"], status="draft")).json()
    [draft] = drafts["data"]
    ordered = {ln["itemTypeId"]: ln["qtyOrdered"] for ln in draft["lines"]}
    assert ordered[bed_set["id"]] == 2
    # Two sets of a duvet cover (900 g, 4.50), a fitted sheet (700 g, 3.00) and two
    # pillowcases (150 g, 0.80); 6 bath towels, 4 hand towels, a bath mat, 2 tea towels; the
    # delivery fee of 8.00.
    assert draft["weightKg"] == (2 * 1900 + 6 * 500 + 4 * 200 + 400 + 2 * 100) / 1000
    cost = 2 * 910 + 6 * 120 + 4 * 60 + 90 + 2 * 40 + 800
    assert draft["estimatedCost"] == {"amount": cost, "currency": "EUR"}


# --- the rule itself: a set line costs and weighs what its components would as lines, or,
# weighed as a bundle, what its priced components and a piece of the rest of its weight would

piece = st.fixed_dictionaries(
    {"grams": st.integers(0, 3000), "price": st.none() | st.integers(0, 5000)}
)


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(piece, min_size=1, max_size=4),
    make_up=st.lists(st.integers(0, 3), min_size=4, max_size=4),
    counts=st.tuples(st.integers(0, 20), st.integers(0, 20), st.integers(0, 20)),
    per_kg=st.none() | st.integers(0, 2000),
    delivered=st.booleans(),
    set_price=st.none() | st.integers(0, 9000),
    set_grams=st.just(0) | st.integers(1, 9000),
)
def test_a_set_line_is_its_components_lines(
    pieces: list[dict[str, int | None]],
    make_up: list[int],
    counts: tuple[int, int, int],
    per_kg: int | None,
    delivered: bool,
    set_price: int | None,
    set_grams: int,
) -> None:
    kinds = {
        i: ItemType(id=i, unit="piece", weight_grams=p["grams"], components=[])
        for i, p in enumerate(pieces, start=1)
    }
    components = [
        {"itemTypeId": i, "qty": qty} for i, qty in zip(kinds, make_up, strict=False) if qty
    ]
    set_id = 99
    kinds[set_id] = ItemType(id=set_id, unit="set", weight_grams=set_grams, components=components)
    items = [{"itemTypeId": i, "unitPrice": p["price"]} for i, p in enumerate(pieces, start=1)]
    prices = PriceList(
        items=[item for item in items if item["unitPrice"] is not None], per_kg=per_kg,
        delivery_fee=0, late_order_surcharge=0,
    )  # fmt: skip
    ordered, got, rejected = counts
    rejected = min(rejected, got)
    accepted = max(got - rejected, 0) if delivered else ordered

    def line(item_type_id: int, times: int) -> SheetLine:
        return SheetLine(
            item_type_id=item_type_id, qty_ordered=ordered * times,
            qty_delivered=got * times, qty_rejected=rejected * times,
        )  # fmt: skip

    def costed(lines: list[SheetLine]) -> tuple[int, int | None]:
        return sheets.estimate(lines, kinds, prices, delivered=delivered, late=False)

    as_set = costed([line(set_id, 1)])
    if set_grams == 0:  # it weighs its components, and costs what they would as lines
        assert as_set == costed([line(c["itemTypeId"], c["qty"]) for c in components])
    else:  # a bundle: its priced components' lines, and a piece of the rest of its weight
        priced = [c for c in components if pieces[c["itemTypeId"] - 1]["price"] is not None]
        as_lines = [line(c["itemTypeId"], c["qty"]) for c in priced]
        if len(priced) < len(components) or not components:
            rest = set_grams - sum(kinds[c["itemTypeId"]].weight_grams * c["qty"] for c in priced)
            kinds[98] = ItemType(id=98, unit="piece", weight_grams=max(rest, 0), components=[])
            as_lines.append(line(98, 1))
        assert as_set == (accepted * set_grams, costed(as_lines)[1])

    if set_price is not None:  # the set's own row wins, whatever its components cost
        prices.items = [*prices.items, {"itemTypeId": set_id, "unitPrice": set_price}]
        assert costed([line(set_id, 1)]) == (as_set[0], accepted * set_price)
