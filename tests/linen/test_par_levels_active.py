"""A property's par levels name active item types (decision 0524): a deactivated one is refused
as a new par level and changes nothing; one deactivated later is kept, and a sheet made from the
par levels is then refused naming it, as a line naming it is."""

from __future__ import annotations

from typing import Any

from tests.linen.helpers import NAPKIN, SET_REFUSED, World, refused_inactive

PAR_REFUSED = "linenPar: 'Napkin' is deactivated; reactivate it, or leave it out of the par levels"
FROM_PAR_REFUSED = (
    "lines: 'Bath towel' is deactivated; it is a par level of the property: reactivate it, "
    "send lines, or take it off linenPar"
)


def _from_par(world: World, service_date: str = "2026-01-10") -> dict[str, Any]:
    return {"propertyId": world.property, "serviceDate": service_date}


async def test_a_deactivated_item_type_is_not_made_a_par_level(world: World) -> None:
    portal = world.portal
    napkin = int((await portal.made("/v1/item-types", NAPKIN))["id"])
    await portal.retire(napkin)
    towels = [{"itemTypeId": world.towel, "qty": 4}]
    assert (await portal.patch(f"/v1/properties/{world.property}", {"linenPar": towels})).is_success
    before = (await portal.get("/v1/properties")).json()

    with_napkin = [*towels, {"itemTypeId": napkin, "qty": 2}]
    new = {"code": "HILL-02", "name": "Hill House", "linenPar": with_napkin}
    refused_inactive(await portal.post("/v1/properties", new), PAR_REFUSED)
    # A retired property is held to it too, as its default laundry is.
    refused_inactive(await portal.post("/v1/properties", {**new, "active": False}), PAR_REFUSED)
    edit = {"name": "Renamed", "linenPar": with_napkin}
    refused_inactive(await portal.patch(f"/v1/properties/{world.property}", edit), PAR_REFUSED)
    assert (await portal.get("/v1/properties")).json() == before  # nothing changed

    # An unknown id stays a 400; the same item type once reactivated is taken.
    unknown = await portal.patch(
        f"/v1/properties/{world.property}", {"linenPar": [{"itemTypeId": 99999, "qty": 1}]}
    )
    assert (unknown.status_code, unknown.json()["error"]) == (400, "unknown_reference")
    assert (await portal.patch(f"/v1/item-types/{napkin}", {"active": True})).is_success
    grown = await portal.patch(f"/v1/properties/{world.property}", edit)
    assert grown.status_code == 200, grown.text
    assert grown.json()["linenPar"] == with_napkin
    made = await portal.post("/v1/properties", new)
    assert made.status_code == 201, made.text


async def test_a_par_level_retired_later_is_kept_and_no_sheet_is_made_of_it(world: World) -> None:
    portal = world.portal
    par = [{"itemTypeId": world.duvet, "qty": 2}, {"itemTypeId": world.towel, "qty": 4}]
    assert (await portal.patch(f"/v1/properties/{world.property}", {"linenPar": par})).is_success
    await portal.retire(world.towel)

    # Kept: the property still lists it, and sending the par levels back is no new choice,
    # with another quantity too.
    changed = [par[0], {"itemTypeId": world.towel, "qty": 6}]
    kept = await portal.patch(
        f"/v1/properties/{world.property}", {"name": "Sea View II", "linenPar": changed}
    )
    assert kept.status_code == 200, kept.text
    assert (kept.json()["name"], kept.json()["linenPar"]) == ("Sea View II", changed)

    # A sheet left without lines orders the par levels: refused, naming the par level; no
    # line is skipped to make a sheet the operator did not ask for.
    refused_inactive(await portal.post("/v1/sheets", _from_par(world)), FROM_PAR_REFUSED)
    assert (await portal.get("/v1/sheets")).json()["total"] == 0
    # Lines sent are the client's choice; a par level at 0 orders nothing, so refuses nothing.
    duvets = [{"itemTypeId": world.duvet, "qtyOrdered": 2}]
    sent = await portal.post("/v1/sheets", {**_from_par(world), "lines": duvets})
    assert sent.status_code == 201, sent.text
    at_zero = [par[0], {"itemTypeId": world.towel, "qty": 0}]
    assert (
        await portal.patch(f"/v1/properties/{world.property}", {"linenPar": at_zero})
    ).is_success
    from_par = await portal.post("/v1/sheets", _from_par(world, "2026-01-11"))
    assert from_par.status_code == 201, from_par.text
    assert [(x["itemTypeId"], x["qtyOrdered"]) for x in from_par.json()["lines"]] == [
        (world.duvet, 2)
    ]

    # Taken out, putting it back is a new choice, refused; nothing changes.
    out = await portal.patch(f"/v1/properties/{world.property}", {"linenPar": [par[0]]})
    assert out.status_code == 200, out.text
    before = (await portal.get(f"/v1/properties/{world.property}")).json()
    back = await portal.patch(f"/v1/properties/{world.property}", {"linenPar": par})
    assert back.status_code == 409, back.text
    assert back.json()["error_description"].startswith("linenPar: 'Bath towel' is deactivated")
    assert (await portal.get(f"/v1/properties/{world.property}")).json() == before


async def test_a_set_with_a_retired_piece_stays_a_par_level_and_is_refused_on_the_sheet(
    world: World,
) -> None:
    """The par level names the set, whose own flag is checked there; the retired piece is the
    set's to fix (decision 0523), and a sheet made from the par levels is refused naming it."""
    portal = world.portal
    pillowcase, bed_set = await world.bed_set()
    await portal.retire(pillowcase)
    par = [{"itemTypeId": bed_set["id"], "qty": 1}]
    taken = await portal.patch(f"/v1/properties/{world.property}", {"linenPar": par})
    assert taken.status_code == 200, taken.text
    refused_inactive(await portal.post("/v1/sheets", _from_par(world)), SET_REFUSED)
    assert (await portal.get("/v1/sheets")).json()["total"] == 0

    assert (await portal.patch(f"/v1/item-types/{pillowcase}", {"active": True})).is_success
    made = await portal.post("/v1/sheets", _from_par(world))
    assert made.status_code == 201, made.text
    assert [x["itemTypeId"] for x in made.json()["lines"]] == [bed_set["id"]]
