"""A property's default laundry is an active one: a deactivated laundry is refused as a new
default and changes nothing; a default deactivated later is kept, and a new sheet relying on it
is refused until another laundry is named (decision 0517)."""

from __future__ import annotations

from tests.linen.helpers import World


async def test_a_deactivated_laundry_is_refused_as_a_default(world: World) -> None:
    portal = world.portal
    closed = await portal.made("/v1/laundries", {"name": "Closed Laundry", "active": False})
    before = (await portal.get("/v1/properties")).json()

    refused = await portal.post(
        "/v1/properties",
        {"code": "HILL-02", "name": "Hill House", "defaultLaundryId": closed["id"]},
    )
    assert refused.status_code == 409
    assert refused.json() == {
        "error": "inactive",
        "error_description": "defaultLaundryId: 'Closed Laundry' is deactivated; choose an "
        "active laundry",
    }
    refused = await portal.patch(
        f"/v1/properties/{world.property}", {"name": "Renamed", "defaultLaundryId": closed["id"]}
    )
    assert (refused.status_code, refused.json()["error"]) == (409, "inactive")
    assert "defaultLaundryId" in refused.json()["error_description"]
    assert (await portal.get("/v1/properties")).json() == before  # nothing changed

    # Unknown stays unknown; the same laundry once reactivated is taken.
    unknown = await portal.post(
        "/v1/properties", {"code": "HILL-02", "name": "Hill House", "defaultLaundryId": 99999}
    )
    assert (unknown.status_code, unknown.json()["error"]) == (400, "unknown_reference")
    await portal.patch(f"/v1/laundries/{closed['id']}", {"active": True})
    made = await portal.post(
        "/v1/properties",
        {"code": "HILL-02", "name": "Hill House", "defaultLaundryId": closed["id"]},
    )
    assert made.status_code == 201, made.text


async def test_a_default_deactivated_later_is_kept_and_takes_no_new_sheet(world: World) -> None:
    portal = world.portal
    other = await portal.made("/v1/laundries", {"name": "Second Laundry"})
    assert (await portal.patch(f"/v1/laundries/{world.laundry}", {"active": False})).is_success

    # The property keeps it; sending it back unchanged is no new choice.
    kept = await portal.patch(
        f"/v1/properties/{world.property}",
        {"name": "Sea View II", "defaultLaundryId": world.laundry},
    )
    assert kept.status_code == 200, kept.text
    assert (kept.json()["name"], kept.json()["defaultLaundryId"]) == ("Sea View II", world.laundry)
    # The properties still to be moved are those listed by the laundry.
    naming = (await portal.get("/v1/properties", laundryId=world.laundry)).json()["data"]
    assert [p["id"] for p in naming] == [world.property]

    # A new sheet relying on the default is refused as one naming the laundry would be.
    lines = [{"itemTypeId": world.towel, "qtyOrdered": 2}]
    body = {"propertyId": world.property, "serviceDate": "2026-01-10", "lines": lines}
    by_default = await portal.post("/v1/sheets", body)
    assert (by_default.status_code, by_default.json()["error"]) == (409, "inactive")
    assert "default laundry" in by_default.json()["error_description"]
    named = await portal.post("/v1/sheets", {**body, "laundryId": world.laundry})
    assert (named.status_code, named.json()["error"]) == (409, "inactive")
    assert (await portal.get("/v1/sheets")).json()["total"] == 0
    elsewhere = await portal.post("/v1/sheets", {**body, "laundryId": other["id"]})
    assert elsewhere.status_code == 201, elsewhere.text

    # Moving away from it is allowed; coming back to it is a new choice, refused.
    moved = await portal.patch(
        f"/v1/properties/{world.property}", {"defaultLaundryId": other["id"]}
    )
    assert moved.json()["defaultLaundryId"] == other["id"]
    back = await portal.patch(
        f"/v1/properties/{world.property}", {"defaultLaundryId": world.laundry}
    )
    assert (back.status_code, back.json()["error"]) == (409, "inactive")
    cleared = await portal.patch(f"/v1/properties/{world.property}", {"defaultLaundryId": None})
    assert cleared.json()["defaultLaundryId"] is None
    assert (await portal.get("/v1/properties", laundryId=world.laundry)).json()["data"] == []
