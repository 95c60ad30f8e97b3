"""The sender worker: no head-of-line blocking, prompt wake-up, leases that expire."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest
from sqlalchemy import delete, select

from switchboard.kit.clock import ManualClock
from switchboard.platform.webhooks import service
from switchboard.platform.webhooks.models import Attempt, Delivery, Subscription
from switchboard.platform.webhooks.tasks import PER_SUBSCRIPTION, Sender, deliver_due, sender
from switchboard.runtime import Runtime
from switchboard.tenants.models import Tenant
from tests.factories import TenantFixture
from tests.webhooks.conftest import Receiver, fire, subscribe


async def test_a_stalled_receiver_does_not_hold_up_other_subscriptions(
    runtime: Runtime, org: TenantFixture, receiver: Receiver
) -> None:
    receiver.gate["/stalled"] = asyncio.Event()  # answers only when the test says so
    await subscribe(runtime, org, receiver.url("/stalled"), ["call.started"])
    await subscribe(runtime, org, receiver.url("/fast"), ["call.ended"])
    await fire(runtime, org, "call.started", count=40)
    await fire(runtime, org, "call.ended")

    async with Sender(runtime) as worker:
        worker.start(await worker.claim())
        await receiver.wait_for(
            lambda: (
                len(receiver.at("/fast")) == 1 and len(receiver.at("/stalled")) == PER_SUBSCRIPTION
            )
        )
        # The fast receiver was served while every stalled request is still open, and the
        # stalled subscription holds only its own share of the sender.
        assert len(receiver.at("/stalled")) == PER_SUBSCRIPTION
        await asyncio.wait_for(worker.finished(1), timeout=10)
        assert await worker.flush() == 1
        receiver.gate["/stalled"].set()
        await worker.drain()
        await worker.flush()

    async with runtime.db.transaction() as session:
        statuses = [d.status for d in await session.scalars(select(Delivery))]
    assert statuses.count("succeeded") == 1 + PER_SUBSCRIPTION
    assert statuses.count("pending") == 40 - PER_SUBSCRIPTION


async def test_the_worker_sends_what_a_commit_queues(
    runtime: Runtime, org: TenantFixture, receiver: Receiver
) -> None:
    await subscribe(runtime, org, receiver.url("/hook"))
    stop = asyncio.Event()
    task = asyncio.create_task(sender(runtime, stop))
    try:
        await fire(runtime, org, "call.started")
        await receiver.wait_for(lambda: len(receiver.requests) == 1)
        await fire(runtime, org, "call.ended", count=5)
        await receiver.wait_for(lambda: len(receiver.requests) == 6)
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=10)
    async with runtime.db.transaction() as session:
        statuses = {d.status for d in await session.scalars(select(Delivery))}
    assert statuses == {"succeeded"}


async def test_an_expired_lease_is_claimed_again_and_the_late_outcome_is_ignored(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    receiver.gate["/hook"] = asyncio.Event()  # the first POST hangs until released
    await subscribe(runtime, org, receiver.url("/hook"))
    await fire(runtime, org)

    async with Sender(runtime) as stalled:
        stalled.start(await stalled.claim())  # sent in time, then the answer takes too long
        await receiver.wait_for(lambda: len(receiver.requests) == 1)
        assert await deliver_due(runtime) == 0, "a leased delivery was claimed twice"
        clock.advance(stalled.lease_seconds + 1)
        receiver.gate["/hook"].set()
        assert await deliver_due(runtime) == 1
        assert [r.headers["X-Platform-Attempt"] for r in receiver.requests] == ["1", "1"]

        # The first sender reports at last: its lease is gone, the row is untouched.
        await stalled.drain()
        assert await stalled.flush() == 1

    async with runtime.db.transaction() as session:
        delivery = (await session.scalars(select(Delivery))).one()
        attempts = list(await session.scalars(select(Attempt)))
    assert (delivery.status, delivery.attempts) == ("succeeded", 1)
    assert len(attempts) == 2  # both POSTs are in the log


async def test_a_lease_that_ran_short_in_the_queue_is_not_sent(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    await subscribe(runtime, org, receiver.url("/hook"))
    await fire(runtime, org)

    async with Sender(runtime) as worker:
        claimed = await worker.claim()
        # Queued behind a slow subscription until too little of the lease is left to cover a
        # POST and its write-back: dropped, and the lease left to run out.
        clock.advance(worker.lease_seconds - worker.timeout - 1)
        worker.start(claimed)
        await worker.drain()
        assert await worker.flush() == 0
        assert receiver.requests == []

        assert await deliver_due(runtime) == 0  # still leased
        clock.advance(worker.timeout + 2)
        assert await deliver_due(runtime) == 1  # then sent once, by whoever claims it
    assert [r.headers["X-Platform-Attempt"] for r in receiver.requests] == ["1"]


async def test_a_subscription_deleted_mid_flight_is_forgotten(
    runtime: Runtime, org: TenantFixture, receiver: Receiver
) -> None:
    receiver.gate["/hook"] = asyncio.Event()
    sub_id, _ = await subscribe(runtime, org, receiver.url("/hook"))
    keep_id, _ = await subscribe(runtime, org, receiver.url("/kept"))
    await fire(runtime, org)

    async with Sender(runtime) as worker:
        worker.start(await worker.claim())
        await receiver.wait_for(lambda: len(receiver.requests) == 2)
        async with runtime.db.transaction() as session:
            await service.delete_subscription(session, tenant_id=org.id, subscription_id=sub_id)
        receiver.gate["/hook"].set()
        await worker.drain()
        assert await worker.flush() == 2

    async with runtime.db.transaction() as session:
        attempts = list(await session.scalars(select(Attempt)))
        deliveries = list(await session.scalars(select(Delivery)))
    assert [(a.subscription_id, a.status_code) for a in attempts] == [(keep_id, 200)]
    assert [(d.subscription_id, d.status) for d in deliveries] == [(keep_id, "succeeded")]


async def test_the_log_goes_with_its_subscription_and_its_tenant(
    runtime: Runtime, org: TenantFixture, other_org: TenantFixture, receiver: Receiver
) -> None:
    """The log's one foreign key is its delivery's (decision 0217): deleting a subscription or
    a whole tenant still takes the attempts along, through the deliveries' own cascades."""
    gone, _ = await subscribe(runtime, org, receiver.url("/gone"))
    kept, _ = await subscribe(runtime, org, receiver.url("/kept"))
    await subscribe(runtime, other_org, receiver.url("/other"))
    await fire(runtime, org)
    await fire(runtime, other_org)
    assert await deliver_due(runtime) == 3

    async with runtime.db.transaction() as session:
        await service.delete_subscription(session, tenant_id=org.id, subscription_id=gone)
        await session.execute(delete(Tenant).where(Tenant.id == other_org.id))

    async with runtime.db.transaction() as session:
        logged = list(await session.scalars(select(Attempt.subscription_id)))
        queued = list(await session.scalars(select(Delivery.subscription_id)))
    assert logged == queued == [kept]


async def test_the_log_is_kept_for_the_retention_period(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    receiver.status["/hook"] = [200, 500]
    await subscribe(runtime, org, receiver.url("/hook"))
    await fire(runtime, org, count=2)
    assert await deliver_due(runtime) == 2  # one succeeds, one waits for its retry

    days = runtime.settings.webhook_log_retention_days
    async with Sender(runtime) as worker:
        clock.advance(days * 86400 - 60)
        assert await worker.prune() == 0
        clock.advance(120)
        assert await worker.prune() == 1

    async with runtime.db.transaction() as session:
        deliveries = list(await session.scalars(select(Delivery)))
        attempts = list(await session.scalars(select(Attempt)))
    assert [d.status for d in deliveries] == ["pending"]  # the queue is never pruned
    assert attempts == []


async def test_each_outcome_of_a_mixed_batch_is_recorded(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    answers = {"/ok": 200, "/accepted": 202, "/error": 500, "/missing": 404}
    subs = {}
    for path, code in answers.items():
        receiver.status[path] = code
        receiver.gate[path] = asyncio.Event()  # every answer waits: they finish together
        subs[path], _ = await subscribe(runtime, org, receiver.url(path))
    await fire(runtime, org, count=3)
    stop = asyncio.Event()
    task = asyncio.create_task(sender(runtime, stop))
    try:
        await receiver.wait_for(lambda: len(receiver.requests) == 12)
        for gate in receiver.gate.values():
            gate.set()
    finally:
        stop.set()  # the worker finishes what is in flight and writes it back
        await asyncio.wait_for(task, timeout=10)

    retry_at = clock.now() + dt.timedelta(seconds=runtime.settings.webhook_retry_delays[0])
    async with runtime.db.transaction() as session:
        deliveries = list(await session.scalars(select(Delivery)))
        attempts = {a.delivery_id: a for a in await session.scalars(select(Attempt))}
        fired = {s.id: s.last_fired_at for s in await session.scalars(select(Subscription))}
    assert len(deliveries) == len(attempts) == 12
    by_sub = {sub: path for path, sub in subs.items()}
    for d in deliveries:
        code = answers[by_sub[d.subscription_id]]
        a = attempts[d.id]
        assert (a.status_code, a.attempt, a.subscription_id) == (code, 1, d.subscription_id)
        assert (d.last_status_code, d.attempts, d.lease_token) == (code, 1, None)
        if code < 300:
            assert (d.status, d.completed_at) == ("succeeded", clock.now())
        else:  # waits for its retry
            assert (d.status, d.next_attempt_at, d.completed_at) == ("pending", retry_at, None)
    assert set(fired.values()) == {clock.now()}


async def test_a_running_sender_leases_ahead_and_gives_back_what_it_did_not_send(
    runtime: Runtime, org: TenantFixture, receiver: Receiver
) -> None:
    receiver.gate["/hook"] = asyncio.Event()
    await subscribe(runtime, org, receiver.url("/hook"))
    await fire(runtime, org, count=6)  # six calls: no order holds any of them back

    stop = asyncio.Event()
    async with Sender(runtime, max_in_flight=2, per_subscription=2) as worker:
        task = asyncio.create_task(worker.run(stop))
        await receiver.wait_for(lambda: len(receiver.requests) == 2)
        async with runtime.db.transaction() as session:
            leased = [d for d in await session.scalars(select(Delivery)) if d.lease_token]
        assert len(leased) == 6  # two sending, four queued behind them
        stop.set()
        await asyncio.wait_for(task, timeout=10)
        # Shutting down: the two sends finish, the four queued ones are not started.
        asyncio.get_running_loop().call_soon(receiver.gate["/hook"].set)

    assert len(receiver.requests) == 2
    async with runtime.db.transaction() as session:
        rows = list(await session.scalars(select(Delivery)))
    assert (
        sorted((d.status, d.lease_token) for d in rows)
        == [("pending", None)] * 4 + [("succeeded", None)] * 2
    )


async def test_an_idle_sender_reads_nothing_until_its_retry_falls_due(
    runtime: Runtime,
    org: TenantFixture,
    receiver: Receiver,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Decision 0222: once a claim found nothing, each poll only asks whether anything was
    committed; the retry that no commit announces is claimed when its time comes."""
    receiver.status["/hook"] = [500, 200]
    await subscribe(runtime, org, receiver.url("/hook"))
    db, changes = runtime.db, runtime.db.changes
    work: list[str] = []  # the sender's units of work on the database
    for name in ("read", "read_on_driver", "write_on_driver"):
        monkeypatch.setattr(db, name, _counted(getattr(db, name), name, work))
    polled = asyncio.Event()
    polls = 0
    version = changes.version

    def counted_version() -> tuple[int, int] | None:
        nonlocal polls
        polls += 1
        polled.set()
        return version()

    monkeypatch.setattr(changes, "version", counted_version)

    async def polls_go_by(count: int) -> None:
        target = polls + count
        while polls < target:
            polled.clear()
            await asyncio.wait_for(polled.wait(), timeout=10)

    runtime.watch_changes = True  # PostgreSQL: the LISTEN that tells other processes' commits
    await runtime.start(run_workers=False)
    await changes.caught_up()
    try:
        stop = asyncio.Event()
        task = asyncio.create_task(sender(runtime, stop))
        try:
            await fire(runtime, org)
            await receiver.wait_for(lambda: len(receiver.requests) == 1)  # answered 500
            await polls_go_by(5)  # the failure written back, a claim found nothing since
            work.clear()
            await polls_go_by(5)
            assert work == []
            clock.advance(1)  # the retry (0.2 s after the failure) is due
            await receiver.wait_for(lambda: len(receiver.requests) == 2)
        finally:
            stop.set()
            await asyncio.wait_for(task, timeout=10)
        async with runtime.db.transaction() as session:
            assert [d.status for d in await session.scalars(select(Delivery))] == ["succeeded"]
    finally:
        await runtime.stop()


def _counted(method: Any, name: str, into: list[str]) -> Any:
    async def counted(*args: Any, **kwargs: Any) -> Any:
        into.append(name)
        return await method(*args, **kwargs)

    return counted
