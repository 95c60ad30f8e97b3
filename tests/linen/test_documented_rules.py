"""What the OpenAPI document states about filters, sort keys, zones and numbers is what the
Data API enforces: a value the document allows is served, one it forbids is a 400."""

from __future__ import annotations

from typing import Any

from tests.linen.helpers import World


def _parameter(document: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    parameters = document["paths"][path]["get"]["parameters"]
    return next(p for p in parameters if p["name"] == name)


async def test_sort_and_status_accept_exactly_the_documented_lists(world: World) -> None:
    portal = world.portal
    await world.confirmed()
    document = (await portal.client.get("/api/openapi.json")).json()
    sort = _parameter(document, "/v1/sheets", "sort")["schema"]
    status = _parameter(document, "/v1/sheets", "status")["schema"]
    assert "serviceDate" in sort["description"]
    assert sort["pattern"].startswith("^$|^-?(")
    assert "cancelled" in status["pattern"]

    for good in ({"sort": "-serviceDate,id"}, {"sort": ""}, {"status": "draft,confirmed"}):
        assert (await portal.get("/v1/sheets", **good)).status_code == 200, good
    for bad, code in (
        ({"sort": "+id"}, "invalid_sort"),
        ({"sort": "id, number"}, "invalid_sort"),
        ({"sort": "id,"}, "invalid_sort"),
        ({"status": "draft, confirmed"}, "invalid_request"),
        ({"status": "lost"}, "invalid_request"),
    ):
        response = await portal.get("/v1/sheets", **bad)
        assert (response.status_code, response.json()["error"]) == (400, code), bad
    assert (await portal.get("/v1/properties", sort="-name")).status_code == 200


async def test_time_zones_updated_since_and_optional_integers(world: World) -> None:
    portal = world.portal
    document = (await portal.client.get("/api/openapi.json")).json()
    zones = document["components"]["schemas"]["PropertyCreate"]["properties"]["timezone"]["enum"]
    assert "Europe/Berlin" in zones
    assert "UTC" in zones
    moved = await portal.patch(f"/v1/properties/{world.property}", {"timezone": "Europe/Berlin"})
    assert moved.status_code == 200
    for zone in ("", "Mars/Olympus", "posix/Europe/Berlin"):
        refused = await portal.patch(f"/v1/properties/{world.property}", {"timezone": zone})
        assert refused.status_code == 400, zone
    since = _parameter(document, "/v1/sheets", "updatedSince")["schema"]
    assert since["format"] == "date-time"
    early = await portal.get("/v1/sheets", updatedSince="0001-01-01T00:00:00+05:00")
    assert (early.status_code, early.json()["error"]) == (400, "invalid_request")
    # An optional integer field takes no boolean (it used to be read as 0).
    prices = await portal.post(
        f"/v1/laundries/{world.laundry}/price-lists",
        {"currency": "EUR", "validFrom": "2026-01-01", "perKg": False, "items": []},
    )
    assert prices.status_code == 400
    assert "perKg" in prices.json()["error_description"]
