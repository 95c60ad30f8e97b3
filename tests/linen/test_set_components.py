"""A set takes new orders only while its pieces are active (decision 0523): a deactivated piece
is not made a component, one deactivated while in a set stays there, and a sheet created,
edited or confirmed with such a set is 409 ``inactive``, as one naming the piece is."""

from __future__ import annotations

from tests.linen.helpers import PILLOWCASE, SET_REFUSED, World, bed_set_body, refused_inactive

PIECE_REFUSED = "components: 'Pillowcase' is deactivated; reactivate it, or leave it out of the set"


async def test_a_deactivated_piece_is_not_made_a_component(world: World) -> None:
    portal = world.portal
    pillowcase = int((await portal.made("/v1/item-types", PILLOWCASE))["id"])
    await portal.retire(pillowcase)
    catalogue = (await portal.get("/v1/item-types")).json()

    refused_inactive(
        await portal.post("/v1/item-types", bed_set_body(world.duvet, pillowcase)), PIECE_REFUSED
    )
    # A retired set is held to it too, as a retired property's default laundry is.
    retired = bed_set_body(world.duvet, pillowcase, active=False)
    refused_inactive(await portal.post("/v1/item-types", retired), PIECE_REFUSED)
    assert (await portal.get("/v1/item-types")).json() == catalogue

    duvet_set = await portal.made(
        "/v1/item-types",
        {
            **bed_set_body(world.duvet, pillowcase),
            "components": [{"itemTypeId": world.duvet, "qty": 1}],
        },
    )
    added = {"components": [*duvet_set["components"], {"itemTypeId": pillowcase, "qty": 2}]}
    refused_inactive(await portal.patch(f"/v1/item-types/{duvet_set['id']}", added), PIECE_REFUSED)
    towel = (await portal.get(f"/v1/item-types/{world.towel}")).json()
    into_set = {"unit": "set", "components": [{"itemTypeId": pillowcase, "qty": 1}]}
    refused_inactive(await portal.patch(f"/v1/item-types/{world.towel}", into_set), PIECE_REFUSED)
    assert (await portal.get(f"/v1/item-types/{duvet_set['id']}")).json() == duvet_set
    assert (await portal.get(f"/v1/item-types/{world.towel}")).json() == towel

    assert (await portal.patch(f"/v1/item-types/{pillowcase}", {"active": True})).is_success
    grown = await portal.patch(f"/v1/item-types/{duvet_set['id']}", added)
    assert grown.status_code == 200, grown.text
    assert grown.json()["components"] == added["components"]


async def test_a_set_with_a_retired_piece_keeps_it_and_takes_no_new_order(world: World) -> None:
    portal = world.portal
    pillowcase, bed_set = await world.bed_set()
    set_line = [{"itemTypeId": bed_set["id"], "qtyOrdered": 2}]
    ordered = await portal.made(
        "/v1/sheets", {"propertyId": world.property, "serviceDate": "2026-01-10", "lines": set_line}
    )
    towels = await world.sheet("2026-01-11")
    assert (await portal.patch(f"/v1/item-types/{pillowcase}", {"active": False})).is_success

    # Kept: the set still lists it, and sending the components back is no new choice.
    kept = await portal.patch(
        f"/v1/item-types/{bed_set['id']}",
        {"name": "Double bed set", "components": [{"itemTypeId": world.duvet, "qty": 1},
                                                  {"itemTypeId": pillowcase, "qty": 3}]},
    )  # fmt: skip
    assert kept.status_code == 200, kept.text
    assert (await portal.patch(f"/v1/item-types/{bed_set['id']}", {"size": "double"})).is_success
    bed_set = (await portal.get(f"/v1/item-types/{bed_set['id']}")).json()
    assert {c["itemTypeId"] for c in bed_set["components"]} == {world.duvet, pillowcase}

    # No new order: a new sheet, an edited draft, a confirmation.
    sheets_before = (await portal.get("/v1/sheets")).json()
    new = {"propertyId": world.property, "serviceDate": "2026-01-12", "lines": set_line}
    refused_inactive(await portal.post("/v1/sheets", new), SET_REFUSED)
    edited = await portal.patch(f"/v1/sheets/{towels['id']}", {"lines": set_line})
    refused_inactive(edited, SET_REFUSED)
    refused_inactive(await portal.post(f"/v1/sheets/{ordered['id']}/confirm"), SET_REFUSED)
    assert (await portal.get("/v1/sheets")).json() == sheets_before
    assert (await portal.get(f"/v1/sheets/{towels['id']}")).json() == towels
    draft = (await portal.get(f"/v1/sheets/{ordered['id']}")).json()
    assert (draft["status"], draft["confirmedAt"]) == ("draft", None)
    jobs = await portal.client.get("/api/laundry/jobs", headers=world.laundry_headers())
    assert jobs.json()["total"] == 0

    # The set's own flag is named first, in the words used for any item type.
    assert (await portal.patch(f"/v1/item-types/{bed_set['id']}", {"active": False})).is_success
    refused_inactive(
        await portal.post(f"/v1/sheets/{ordered['id']}/confirm"),
        "lines: 'Double bed set' is deactivated; reactivate it, or take it off the draft",
    )
    assert (await portal.patch(f"/v1/item-types/{bed_set['id']}", {"active": True})).is_success

    # Taken out of the set, the set orders again; putting it back is a new choice, refused.
    only_duvet = {"components": [{"itemTypeId": world.duvet, "qty": 1}]}
    assert (await portal.patch(f"/v1/item-types/{bed_set['id']}", only_duvet)).is_success
    back = {"components": [*only_duvet["components"], {"itemTypeId": pillowcase, "qty": 2}]}
    refused_inactive(await portal.patch(f"/v1/item-types/{bed_set['id']}", back), PIECE_REFUSED)
    confirmed = await portal.post(f"/v1/sheets/{ordered['id']}/confirm")
    assert (confirmed.status_code, confirmed.json()["status"]) == (200, "confirmed")
    jobs = await portal.client.get("/api/laundry/jobs", headers=world.laundry_headers())
    assert [job["id"] for job in jobs.json()["data"]] == [ordered["id"]]


async def test_a_reactivated_piece_lets_the_set_be_ordered_again(world: World) -> None:
    portal = world.portal
    pillowcase, bed_set = await world.bed_set()
    draft = await portal.made(
        "/v1/sheets",
        {"propertyId": world.property, "serviceDate": "2026-01-10",
         "lines": [{"itemTypeId": bed_set["id"], "qtyOrdered": 1}]},
    )  # fmt: skip
    assert (await portal.patch(f"/v1/item-types/{pillowcase}", {"active": False})).is_success
    refused_inactive(await portal.post(f"/v1/sheets/{draft['id']}/confirm"), SET_REFUSED)
    assert (await portal.patch(f"/v1/item-types/{pillowcase}", {"active": True})).is_success
    confirmed = await portal.post(f"/v1/sheets/{draft['id']}/confirm")
    assert (confirmed.status_code, confirmed.json()["status"]) == (200, "confirmed")
