"""Spec 3.2: 20 consecutive failed deliveries pause a subscription; a success resets the tally."""

from __future__ import annotations

import pytest
from httpx import AsyncClient
from sqlalchemy import select

from switchboard.kit.clock import ManualClock
from switchboard.kit.errors import Conflict
from switchboard.platform.webhooks import service
from switchboard.platform.webhooks.models import Delivery
from switchboard.platform.webhooks.tasks import deliver_due
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.webhooks.conftest import Receiver, fire, subscribe


async def _run_out(runtime: Runtime, clock: ManualClock) -> None:
    """Drive every queued delivery through all its attempts (passes claim at most 16 of one
    subscription, so this loops until the queue is empty)."""
    idle = 0
    while idle < 2:
        idle = idle + 1 if await deliver_due(runtime) == 0 else 0
        clock.advance(1)


async def _state(runtime: Runtime, tenant: TenantFixture, sub_id: str) -> tuple[bool, int]:
    async with runtime.db.transaction() as session:
        row = await service.get_subscription(session, tenant_id=tenant.id, subscription_id=sub_id)
        return row.active, row.failures


async def test_twenty_failed_deliveries_pause_and_nothing_is_sent_until_resumed(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    receiver.status["/down"] = 500
    sub_id, _ = await subscribe(runtime, org, receiver.url("/down"))

    await fire(runtime, org, count=19)
    await _run_out(runtime, clock)
    assert await _state(runtime, org, sub_id) == (True, 19)
    assert len(receiver.at("/down")) == 19 * 4  # a failure is a delivery, not an attempt

    await fire(runtime, org)
    await _run_out(runtime, clock)
    assert await _state(runtime, org, sub_id) == (False, 20)

    sent = len(receiver.requests)
    await fire(runtime, org, count=3)
    await _run_out(runtime, clock)
    assert len(receiver.requests) == sent, "a paused subscription received an event"
    async with runtime.db.transaction() as session:
        with pytest.raises(Conflict):
            await service.send_test(
                session,
                tenant_id=org.id,
                tenant_name=org.name,
                subscription_id=sub_id,
                clock=clock,
            )

    receiver.status["/down"] = 200
    async with runtime.db.transaction() as session:
        await service.resume_subscription(session, tenant_id=org.id, subscription_id=sub_id)
    assert await _state(runtime, org, sub_id) == (True, 0)
    await fire(runtime, org, "call.ended")
    assert await deliver_due(runtime) == 1
    assert receiver.requests[-1].headers["X-Platform-Event"] == "call.ended"
    assert len(receiver.requests) == sent + 1


async def test_pause_fails_the_rest_of_the_queue(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    receiver.status["/down"] = 500
    sub_id, _ = await subscribe(runtime, org, receiver.url("/down"))
    await fire(runtime, org, count=60)
    await _run_out(runtime, clock)

    assert await _state(runtime, org, sub_id) == (False, 20)
    async with runtime.db.transaction() as session:
        rows = list(await session.scalars(select(Delivery)))
    assert {row.status for row in rows} == {"failed"}
    held = [row for row in rows if row.last_error == "subscription paused"]
    assert held, "deliveries queued at the pause were not finished"
    assert len(receiver.requests) < 60 * 4


async def test_a_success_resets_the_tally(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    receiver.status["/flaky"] = 500
    sub_id, _ = await subscribe(runtime, org, receiver.url("/flaky"))
    await fire(runtime, org, count=5)
    await _run_out(runtime, clock)
    assert await _state(runtime, org, sub_id) == (True, 5)

    receiver.status["/flaky"] = [500, 204]  # fails once, then succeeds on its retry
    await fire(runtime, org)
    await _run_out(runtime, clock)
    assert await _state(runtime, org, sub_id) == (True, 0)


async def test_rest_view_shows_the_pause(
    app_client: AsyncClient,
    runtime: Runtime,
    clock: ManualClock,
    acme: TenantFixture,
    receiver: Receiver,
) -> None:
    receiver.status["/down"] = 500
    sub_id, _ = await subscribe(runtime, acme, receiver.url("/down"))
    await fire(runtime, acme, count=20)
    await _run_out(runtime, clock)

    response = await app_client.get("/api.ashx/v1/webhooks", headers=await acme.auth(app_client))
    [item] = response.json()["data"]
    assert (item["id"], item["active"], item["failures"]) == (sub_id, False, 20)
    assert item["lastFiredUtc"] is not None
