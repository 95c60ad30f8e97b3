"""Linen sheets over HTTP: the state machine, draft-only edits, counts, estimates, lists."""

from __future__ import annotations

from typing import Any

from switchboard.kit.clock import ManualClock
from tests.linen.helpers import World


async def _status(world: World, sheet_id: int) -> str:
    status: str = (await world.portal.get(f"/v1/sheets/{sheet_id}")).json()["status"]
    return status


async def test_draft_is_numbered_estimated_and_editable(world: World) -> None:
    sheet = await world.sheet(bookingRef="BK-7", guestCount=4)
    assert sheet["number"] == "LS-2026-000001"
    assert sheet["status"] == "draft"
    assert sheet["laundryId"] == world.laundry  # the property's default laundry
    # 2 duvets x 250 + 4 towels x 0.5 kg x 300/kg + delivery fee 500
    assert sheet["estimatedCost"] == {"amount": 500 + 600 + 500, "currency": "EUR"}
    assert sheet["weightKg"] == 3.8
    edited = await world.portal.patch(
        f"/v1/sheets/{sheet['id']}", {"lines": [{"itemTypeId": world.duvet, "qtyOrdered": 1}]}
    )
    assert edited.status_code == 200
    assert [line["qtyOrdered"] for line in edited.json()["lines"]] == [1]
    assert edited.json()["estimatedCost"]["amount"] == 250 + 500
    second = await world.sheet()
    assert second["number"] == "LS-2026-000002"


async def test_full_lifecycle_draft_confirmed_delivered_invoiced(
    world: World, clock: ManualClock
) -> None:
    sheet = await world.sheet()
    confirmed = await world.portal.post(f"/v1/sheets/{sheet['id']}/confirm")
    assert confirmed.status_code == 200
    body = confirmed.json()
    assert (body["status"], body["confirmedBy"]) == ("confirmed", "admin")
    assert body["lateOrder"] is False  # ordered nine days ahead
    # Confirmed: lines are no longer editable, and it cannot be confirmed twice.
    edit = await world.portal.patch(f"/v1/sheets/{sheet['id']}", {"notes": "x"})
    assert (edit.status_code, edit.json()["error"]) == (409, "not_editable")
    again = await world.portal.post(f"/v1/sheets/{sheet['id']}/confirm")
    assert (again.status_code, again.json()["error"]) == (409, "invalid_transition")
    deleted = await world.portal.delete(f"/v1/sheets/{sheet['id']}")
    assert deleted.status_code == 409
    clock.advance(600)
    delivered = await world.portal.post(
        f"/v1/sheets/{sheet['id']}/delivery",
        {"lines": [{"itemTypeId": world.duvet, "qtyDelivered": 2, "qtyRejected": 1,
                    "qtyCollected": 2, "note": "one stained"}]},
    )  # fmt: skip
    assert delivered.status_code == 200, delivered.text
    lines = {line["itemTypeId"]: line for line in delivered.json()["lines"]}
    assert lines[world.duvet]["balanceDue"] == 1
    assert lines[world.duvet]["note"] == "one stained"
    assert lines[world.towel]["balanceDue"] == 4  # nothing delivered yet
    assert delivered.json()["deliveredAt"] == "2026-01-01T12:10:00Z"
    # Costed on accepted counts once delivered: 1 duvet x 250 + fee 500
    assert delivered.json()["estimatedCost"]["amount"] == 750
    cancel = await world.portal.post(f"/v1/sheets/{sheet['id']}/cancel", {"reason": "late"})
    assert (cancel.status_code, cancel.json()["error"]) == (409, "invalid_transition")
    assert await _status(world, sheet["id"]) == "delivered"


async def test_cancel_from_draft_and_confirmed_only(world: World) -> None:
    draft = await world.sheet()
    cancelled = await world.portal.post(
        f"/v1/sheets/{draft['id']}/cancel", {"reason": "guest left"}
    )
    assert cancelled.status_code == 200
    assert cancelled.json()["cancelReason"] == "guest left"
    assert cancelled.json()["cancelledBy"] == "admin"
    confirmed = await world.confirmed()
    response = await world.portal.post(f"/v1/sheets/{confirmed['id']}/cancel")
    assert response.json()["status"] == "cancelled"
    for action, body in (("confirm", None), ("cancel", None), ("delivery", {"lines": [
            {"itemTypeId": world.duvet, "qtyDelivered": 1}]})):  # fmt: skip
        refused = await world.portal.post(f"/v1/sheets/{confirmed['id']}/{action}", body)
        assert (refused.status_code, refused.json()["error"]) == (409, "invalid_transition")
    assert await _status(world, confirmed["id"]) == "cancelled"


async def test_delivery_needs_a_confirmed_sheet(world: World) -> None:
    draft = await world.sheet()
    response = await world.portal.post(
        f"/v1/sheets/{draft['id']}/delivery",
        {"lines": [{"itemTypeId": world.duvet, "qtyDelivered": 1}]},
    )
    assert (response.status_code, response.json()["error"]) == (409, "invalid_transition")
    assert await _status(world, draft["id"]) == "draft"


async def test_lines_default_to_par_levels(world: World) -> None:
    await world.portal.patch(
        f"/v1/properties/{world.property}",
        {
            "linenPar": [
                {"itemTypeId": world.towel, "qty": 6},
                {"itemTypeId": world.duvet, "qty": 0},
            ]
        },
    )
    sheet = await world.portal.made(
        "/v1/sheets", {"propertyId": world.property, "serviceDate": "2026-02-01"}
    )
    assert [(line["itemTypeId"], line["qtyOrdered"]) for line in sheet["lines"]] == [
        (world.towel, 6)
    ]


async def test_an_empty_sheet_cannot_be_confirmed(world: World) -> None:
    sheet = await world.portal.made(
        "/v1/sheets", {"propertyId": world.property, "serviceDate": "2026-02-01", "lines": []}
    )
    response = await world.portal.post(f"/v1/sheets/{sheet['id']}/confirm")
    assert (response.status_code, response.json()["error"]) == (409, "empty")


async def test_late_orders_carry_the_surcharge(world: World) -> None:
    sheet = await world.confirmed("2026-01-02")  # the clock says 2026-01-01 12:00
    assert sheet["lateOrder"] is True
    assert sheet["estimatedCost"]["amount"] == 500 + 600 + 500 + 1000


async def test_bad_input_is_a_clear_4xx_and_changes_nothing(world: World) -> None:
    portal = world.portal
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"propertyId": world.property, "serviceDate": "2026-01-10",
          "lines": [{"itemTypeId": world.duvet, "qtyOrdered": -1}]}, 400, "invalid_request"),
        ({"propertyId": 999, "serviceDate": "2026-01-10"}, 400, "unknown_reference"),
        ({"propertyId": world.property, "serviceDate": "2026-01-10",
          "lines": [{"itemTypeId": 999, "qtyOrdered": 1}]}, 400, "unknown_reference"),
        ({"propertyId": world.property, "serviceDate": "not-a-date"}, 400, "invalid_request"),
        ({"propertyId": world.property, "serviceDate": "2026-01-10",
          "pickupDate": "2026-01-09"}, 400, "invalid_request"),
        ({"propertyId": world.property, "serviceDate": "2026-01-10", "reason": "party"},
         400, "invalid_request"),
        ({"propertyId": world.property, "serviceDate": "2026-01-10", "lines": [
            {"itemTypeId": world.duvet, "qtyOrdered": 1},
            {"itemTypeId": world.duvet, "qtyOrdered": 2}]}, 400, "invalid_request"),
    ]  # fmt: skip
    for body, status, code in cases:
        response = await portal.post("/v1/sheets", body)
        assert (response.status_code, response.json()["error"]) == (status, code), body
    assert (await portal.get("/v1/sheets")).json()["total"] == 0
    sheet = await world.confirmed()
    negative = await portal.post(
        f"/v1/sheets/{sheet['id']}/delivery",
        {"lines": [{"itemTypeId": world.duvet, "qtyDelivered": -2}]},
    )
    assert negative.status_code == 400
    too_many_rejected = await portal.post(
        f"/v1/sheets/{sheet['id']}/delivery",
        {"lines": [{"itemTypeId": world.duvet, "qtyDelivered": 1, "qtyRejected": 2}]},
    )
    assert too_many_rejected.status_code == 400
    assert await _status(world, sheet["id"]) == "confirmed"
    assert (await portal.get("/v1/sheets/999")).status_code == 404
    huge = 2**40  # beyond the id range: a 400, never a database overflow
    assert (await portal.get(f"/v1/sheets/{huge}")).status_code == 400
    assert (await portal.get("/v1/sheets", propertyId=huge)).status_code == 400
    overflow = await portal.post("/v1/sheets", {"propertyId": huge, "serviceDate": "2026-01-10"})
    assert overflow.status_code == 400
    assert (await portal.post("/v1/sheets/999/confirm")).status_code == 404


async def test_lists_filter_sort_and_page(world: World) -> None:
    portal = world.portal
    other = await portal.made("/v1/properties", {"code": "HILL-02", "name": "Hill House"})
    group = await portal.made("/v1/groups", {"name": "Coast", "kind": "region",
                                             "propertyIds": [world.property]})  # fmt: skip
    a = await world.sheet("2026-01-05")
    b = await world.confirmed("2026-01-20")
    c = await portal.made(
        "/v1/sheets",
        {"propertyId": other["id"], "laundryId": world.laundry, "serviceDate": "2026-02-01"},
    )

    async def ids(**params: Any) -> list[int]:
        response = await portal.get("/v1/sheets", **params)
        assert response.status_code == 200, response.text
        return [item["id"] for item in response.json()["data"]]

    assert await ids() == [c["id"], b["id"], a["id"]]  # default: newest service date first
    assert await ids(sort="serviceDate") == [a["id"], b["id"], c["id"]]
    assert await ids(status="confirmed") == [b["id"]]
    assert await ids(status="draft,confirmed", sort="id") == [a["id"], b["id"], c["id"]]
    assert await ids(propertyId=other["id"]) == [c["id"]]
    assert await ids(groupId=group["id"], sort="id") == [a["id"], b["id"]]
    assert await ids(laundryId=world.laundry, **{"from": "2026-01-10", "to": "2026-01-31"}) == [
        b["id"]
    ]
    first = (await portal.get("/v1/sheets", limit=2, sort="id")).json()
    assert (first["total"], first["limit"], first["offset"]) == (3, 2, 0)
    assert first["next"] == "/api/v1/sheets?sort=id&limit=2&offset=2" or first["next"].endswith(
        "limit=2&offset=2"
    )
    bad_sort = await portal.get("/v1/sheets", sort="price")
    assert (bad_sort.status_code, bad_sort.json()["error"]) == (400, "invalid_sort")
    bad_status = await portal.get("/v1/sheets", status="lost")
    assert bad_status.status_code == 400
    bad_range = await portal.get("/v1/sheets", **{"from": "2026-02-01", "to": "2026-01-01"})
    assert (bad_range.status_code, bad_range.json()["error"]) == (400, "invalid_range")
    too_big = await portal.get("/v1/sheets", limit=501)
    assert too_big.status_code == 400


async def test_deactivated_things_take_no_new_orders(world: World) -> None:
    portal = world.portal
    await portal.patch(f"/v1/item-types/{world.towel}", {"active": False})
    refused = await portal.post(
        "/v1/sheets",
        {"propertyId": world.property, "serviceDate": "2026-01-10",
         "lines": [{"itemTypeId": world.towel, "qtyOrdered": 1}]},
    )  # fmt: skip
    assert (refused.status_code, refused.json()["error"]) == (409, "inactive")
    await portal.patch(f"/v1/item-types/{world.towel}", {"active": True})
    await portal.patch(f"/v1/properties/{world.property}", {"active": False})
    refused = await portal.post(
        "/v1/sheets", {"propertyId": world.property, "serviceDate": "2026-01-10"}
    )
    assert (refused.status_code, refused.json()["error"]) == (409, "inactive")
    assert (await portal.get("/v1/sheets")).json()["total"] == 0


async def test_running_balance_carries_to_the_next_delivery(world: World) -> None:
    portal = world.portal
    first = await world.confirmed("2026-01-10")
    await portal.post(
        f"/v1/sheets/{first['id']}/delivery",
        {"lines": [{"itemTypeId": world.duvet, "qtyDelivered": 2, "qtyRejected": 1},
                   {"itemTypeId": world.towel, "qtyDelivered": 1}]},
    )  # fmt: skip
    balance = (await portal.get(f"/v1/properties/{world.property}/balance", "user")).json()
    owed = {i["code"]: (i["ordered"], i["accepted"], i["balance"]) for i in balance["items"]}
    assert owed == {"DUVET_COVER_DOUBLE": (2, 1, 1), "TOWEL_BATH": (4, 1, 3)}
    second = await world.confirmed("2026-01-12")  # orders 2 duvets, 4 towels again
    await portal.post(
        f"/v1/sheets/{second['id']}/delivery",
        {"lines": [{"itemTypeId": world.duvet, "qtyDelivered": 3},
                   {"itemTypeId": world.towel, "qtyDelivered": 8}]},
    )  # fmt: skip
    balance = (await portal.get(f"/v1/properties/{world.property}/balance")).json()
    assert {i["code"]: i["balance"] for i in balance["items"]} == {
        "DUVET_COVER_DOUBLE": 0, "TOWEL_BATH": -1,
    }  # fmt: skip
    before = await portal.get(f"/v1/properties/{world.property}/balance", until="2026-01-11")
    assert {i["code"]: i["balance"] for i in before.json()["items"]}["TOWEL_BATH"] == 3
    assert (await portal.get("/v1/properties/999/balance")).status_code == 404


async def test_a_draft_whose_references_were_deactivated_is_not_confirmed(world: World) -> None:
    """Decision 0517's aim holds at the confirmation too: no new order reaches a laundry that no
    longer works for the tenant, nor orders a retired property or item type."""
    portal = world.portal
    draft = await world.sheet()
    confirm = f"/v1/sheets/{draft['id']}/confirm"
    jobs = "/api/laundry/jobs"
    for path, field, name in (
        (f"/v1/laundries/{world.laundry}", "laundryId", "Blanc Laundry"),
        (f"/v1/properties/{world.property}", "propertyId", "Sea View"),
        (f"/v1/item-types/{world.towel}", "lines", "Bath towel"),
    ):
        assert (await portal.patch(path, {"active": False})).status_code == 200
        refused = await portal.post(confirm)
        assert (refused.status_code, refused.json()["error"]) == (409, "inactive"), path
        assert refused.json()["error_description"].startswith(f"{field}: '{name}' is deactivated")
        sheet = (await portal.get(f"/v1/sheets/{draft['id']}")).json()
        assert (sheet["status"], sheet["confirmedAt"]) == ("draft", None)
        assert (await portal.patch(path, {"active": True})).status_code == 200
    listed = await portal.client.get(jobs, headers=world.laundry_headers())
    assert listed.json()["total"] == 0
    confirmed = await portal.post(confirm)
    assert (confirmed.status_code, confirmed.json()["status"]) == (200, "confirmed")
    listed = await portal.client.get(jobs, headers=world.laundry_headers())
    assert [job["id"] for job in listed.json()["data"]] == [draft["id"]]
