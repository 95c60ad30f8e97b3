"""The webhook history's retention: what is old goes a chunk at a time, what is pending or young
stays (decision 0225)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select, update

from switchboard.kit.clock import ManualClock
from switchboard.platform.events.models import Event
from switchboard.platform.webhooks import retention
from switchboard.platform.webhooks.models import PENDING, Attempt, Delivery
from switchboard.platform.webhooks.tasks import deliver_due
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.webhooks.conftest import Receiver, fire, subscribe

DAY = 86400


async def _history(runtime: Runtime) -> tuple[list[str], list[str], int]:
    """The deliveries' and the log's delivery ids in write order, and the events' count."""
    async with runtime.db.transaction() as session:
        deliveries = list(await session.scalars(select(Delivery.id).order_by(Delivery.seq)))
        logged = list(await session.scalars(select(Attempt.delivery_id).order_by(Attempt.id)))
        events = int(await session.scalar(select(func.count()).select_from(Event)) or 0)
    return deliveries, logged, events


async def _pending(runtime: Runtime) -> set[str]:
    async with runtime.db.transaction() as session:
        return set(await session.scalars(select(Delivery.id).where(Delivery.status == PENDING)))


async def test_old_history_goes_in_chunks_and_the_rest_stays(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    receiver.status["/ok"] = 200
    receiver.status["/down"] = 500
    await subscribe(runtime, org, receiver.url("/ok"))
    # Day 0: seven events, each delivered once (the log: one attempt a delivery).
    await fire(runtime, org, count=7)
    assert await deliver_due(runtime) == 7
    clock.advance(2 * DAY)
    # Day 2: one event to two subscriptions; one receiver fails, its delivery stays pending.
    await subscribe(runtime, org, receiver.url("/down"), events=["call.ended"])
    await fire(runtime, org, "call.ended")
    assert await deliver_due(runtime) == 2
    [pending] = await _pending(runtime)
    clock.advance(2 * DAY)
    # Day 4: three more events, delivered, and the pending one tried again (and failed).
    await fire(runtime, org, count=3)
    assert await deliver_due(runtime) == 4
    everything, logged, events = await _history(runtime)
    day4 = set(everything[-3:])
    assert (len(everything), len(logged), events) == (12, 13, 11)

    before = clock.now() - dt.timedelta(days=1)  # days 0 and 2 are old
    removed = await retention.prune(runtime.db, before=before, chunk=3)

    deliveries, logged, events = await _history(runtime)
    assert removed == 8  # day 0's seven and day 2's that succeeded
    assert set(deliveries) == {pending} | day4
    assert sorted(logged) == sorted([pending, *day4])  # the day 4 attempts only
    assert events == 3
    # Nothing more is old: a second prune removes nothing.
    assert await retention.prune(runtime.db, before=before, chunk=3) == 0
    assert await _history(runtime) == (deliveries, logged, events)


async def test_a_delivery_finished_after_the_cutoff_stays(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    """Created long ago, retried until recently: its age is its completion's."""
    receiver.status["/hook"] = 200
    await subscribe(runtime, org, receiver.url("/hook"))
    await fire(runtime, org, count=2)
    assert await deliver_due(runtime) == 2
    _, second = (await _history(runtime))[0]
    clock.advance(10 * DAY)
    async with runtime.db.transaction() as session:
        await session.execute(
            update(Delivery).where(Delivery.id == second).values(completed_at=clock.now())
        )
    before = clock.now() - dt.timedelta(days=1)
    assert await retention.prune(runtime.db, before=before, chunk=1) == 1
    assert (await _history(runtime))[0] == [second]


async def test_an_attempt_logged_out_of_order_goes_with_the_next_prune(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    """The walk stops at the first chunk that begins with a young row: an old row written after
    it (an attempt logged when a long POST ended) waits for a later prune, and is not lost."""
    receiver.status["/hook"] = 200
    await subscribe(runtime, org, receiver.url("/hook"))
    await fire(runtime, org, count=3)
    assert await deliver_due(runtime) == 3
    deliveries = (await _history(runtime))[0]
    async with runtime.db.transaction() as session:  # the second attempt started late
        started = clock.now() + dt.timedelta(days=5)
        await session.execute(
            update(Attempt).where(Attempt.delivery_id == deliveries[1]).values(started_at=started)
        )
    clock.advance(10 * DAY)
    early = clock.now() - dt.timedelta(days=7)  # older than the first and third, not the second
    await retention.prune(runtime.db, before=early, chunk=1)
    assert (await _history(runtime))[1] == deliveries[1:]  # the third waits behind the second
    await retention.prune(runtime.db, before=clock.now(), chunk=1)
    assert (await _history(runtime))[1] == []
