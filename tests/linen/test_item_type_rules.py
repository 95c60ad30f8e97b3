"""Item types that something refers to: deletes refused while in use, sets made of pieces."""

from __future__ import annotations

from tests.linen.helpers import World


async def test_par_levels_and_price_lists_keep_an_item_type_from_deletion(world: World) -> None:
    portal = world.portal
    prices = f"/v1/laundries/{world.laundry}/price-lists"
    price_list = (await portal.get(prices)).json()["data"][0]
    await portal.patch(
        f"/v1/properties/{world.property}", {"linenPar": [{"itemTypeId": world.towel, "qty": 6}]}
    )
    par = await portal.delete(f"/v1/item-types/{world.towel}")
    assert (par.status_code, par.json()["error"]) == (409, "in_use")
    assert "property SEA-01" in par.json()["error_description"]
    priced = await portal.delete(f"/v1/item-types/{world.duvet}")  # priced by the world's list
    assert (priced.status_code, priced.json()["error"]) == (409, "in_use")
    assert f"price list {price_list['id']}" in priced.json()["error_description"]
    for kept in (world.towel, world.duvet):
        assert (await portal.get(f"/v1/item-types/{kept}")).status_code == 200
    # A sheet made from the par levels still finds every item type.
    sheet = await portal.made(
        "/v1/sheets", {"propertyId": world.property, "serviceDate": "2026-02-01"}
    )
    assert [line["itemTypeId"] for line in sheet["lines"]] == [world.towel]
    used = await portal.delete(f"/v1/item-types/{world.towel}")
    assert used.json()["error_description"] == (
        "the item type is still used by the par levels of property SEA-01, sheet LS-2026-000001;"
        " deactivate it instead"
    )

    # Once nothing refers to them, they go.
    assert (await portal.delete(f"/v1/sheets/{sheet['id']}")).status_code == 200
    await portal.patch(f"/v1/properties/{world.property}", {"linenPar": []})
    assert (
        await portal.put(f"{prices}/{price_list['id']}", {**price_list, "items": []})
    ).is_success
    assert (await portal.delete(f"/v1/item-types/{world.towel}")).status_code == 200
    assert (await portal.delete(f"/v1/item-types/{world.duvet}")).status_code == 200
    assert (await portal.get("/v1/item-types")).json()["total"] == 0


async def test_a_deleted_item_type_id_is_never_given_again(world: World) -> None:
    portal = world.portal
    last = await portal.made("/v1/item-types", {"code": "NAPKIN", "name": "x", "category": "other"})
    assert (await portal.delete(f"/v1/item-types/{last['id']}")).status_code == 200
    after = await portal.made("/v1/item-types", {"code": "APRON", "name": "x", "category": "other"})
    assert after["id"] > last["id"]


async def test_a_component_of_a_set_does_not_become_a_set(world: World) -> None:
    portal = world.portal
    bed_set = await portal.made(
        "/v1/item-types",
        {"code": "BED_SET", "name": "Bed set", "category": "bed", "unit": "set",
         "components": [{"itemTypeId": world.duvet, "qty": 1}]},
    )  # fmt: skip
    refused = await portal.patch(f"/v1/item-types/{world.duvet}", {"unit": "set", "name": "New"})
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_request")
    assert "BED_SET" in refused.json()["error_description"]
    unchanged = (await portal.get(f"/v1/item-types/{world.duvet}")).json()
    assert (unchanged["unit"], unchanged["name"]) == ("piece", "Duvet cover double")
    # Out of the set, it may become one.
    await portal.patch(
        f"/v1/item-types/{bed_set['id']}", {"components": [{"itemTypeId": world.towel, "qty": 2}]}
    )
    became = await portal.patch(
        f"/v1/item-types/{world.duvet}",
        {"unit": "set", "components": [{"itemTypeId": world.towel, "qty": 1}]},
    )
    assert became.status_code == 200, became.text
    assert became.json()["unit"] == "set"
