"""The sender's driver: claims with leases, keeps the sends going, writes outcomes back per tick.

While busy the sender leases ahead of its sends (decisions 0994, 0219): each send that
finishes starts the next leased delivery on the spot, while each tick leases the next batch
and then writes the finished attempts back. The sends never wait for the database."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import functools
import logging
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

from switchboard.kit.changes import Quiet
from switchboard.kit.destinations import parse_networks
from switchboard.kit.driver import Runner
from switchboard.kit.listen import listen
from switchboard.platform.webhooks import queue, retention, service
from switchboard.platform.webhooks.queue import Candidate, Claimed
from switchboard.platform.webhooks.tasks._outcomes import Outcome, Writes
from switchboard.platform.webhooks.tasks._post import Poster
from switchboard.runtime import Runtime

log = logging.getLogger("switchboard.webhooks")

MAX_IN_FLIGHT = 128
PER_SUBSCRIPTION = 32
# Leases one sender holds at once while running: the deliveries being sent, those queued to be
# sent next and the finished ones not yet written back: ``AHEAD`` times the sends, so the next
# batches are leased while earlier ones go out; with the outcomes being written back, also the
# bound on duplicates after a crash.
AHEAD = 8
MAX_LEASED = AHEAD * MAX_IN_FLIGHT
IDLE_POLL_SQLITE = 0.05
IDLE_POLL_POSTGRES = 2.0
TICK = 0.01  # while sends are in flight, outcomes are written and slots refilled per tick
PRUNE_EVERY = 3600.0


def _count_down(counter: collections.Counter[str], key: str) -> None:
    """One fewer for ``key``; a key at zero is dropped (the counts are read as per-key caps)."""
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]


@dataclass(frozen=True, slots=True)
class _Room:
    """The leases a claim may take, as they stood when the tick began (sends go on finishing
    while the tick's statements run): how many in all, and each subscription's count and cap."""

    free: int
    leased: dict[str, int]
    cap: int


@dataclass(frozen=True, slots=True)
class _Claim:
    leased: list[Claimed]
    more: bool  # the candidates filled the query: more may be due right now


class Sender:
    """Claims, sends and completes deliveries for one process."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        max_in_flight: int = MAX_IN_FLIGHT,
        per_subscription: int = PER_SUBSCRIPTION,
    ) -> None:
        settings = runtime.settings
        self.runtime = runtime
        self.max_in_flight = max_in_flight
        self.per_subscription = per_subscription
        self.allow = parse_networks(settings.webhook_allow_private)
        self.delays = settings.webhook_retry_delays or (0.0,)
        self.timeout = settings.webhook_timeout
        # Covers the longest POST (``timeout``) plus writing its outcome back, with room for a
        # busy database; a lease that still runs out only costs a duplicate (at-least-once).
        self.lease_seconds = 3 * self.timeout + 2
        # A queued delivery is sent only while its lease still covers that much; one that
        # waited longer (behind a slow subscription) is dropped and its lease left to run out.
        self.send_margin = dt.timedelta(seconds=self.timeout + 2)
        self.postgres = runtime.db.dialect == "postgresql"
        self._idle_poll = IDLE_POLL_POSTGRES if self.postgres else IDLE_POLL_SQLITE
        self.poster = Poster(
            box=runtime.box, allow=self.allow, timeout=self.timeout, limit=max_in_flight
        )
        self._ready: collections.deque[Claimed] = collections.deque()  # leased, not yet sent
        self._sending: collections.Counter[str] = collections.Counter()  # per subscription
        self._leased: collections.Counter[str] = collections.Counter()  # until written back
        self._tasks: set[asyncio.Task[None]] = set()  # each sends until nothing is ready
        # Sending tasks still taking work: a task that found nothing ready has stopped, though
        # it stays in ``_tasks`` until its done-callback runs, a loop iteration later.
        self._senders = 0
        self._done: list[Outcome] = []
        self._wake = asyncio.Event()  # new deliveries were committed
        self._progress = asyncio.Event()  # a send finished
        self._hungry = asyncio.Event()  # a batch of sends finished: time for the next tick
        self._closing = False
        self._more = True  # the last claim was full: more may be due right now
        self._poll_at = 0.0
        self._quiet = Quiet(runtime.db.changes)  # an idle poll skips an unchanged database

    async def __aenter__(self) -> Sender:
        self.poster.open()
        service.add_waker(self.kick)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        service.remove_waker(self.kick)
        self._closing = True  # the sends in flight finish; nothing queued starts
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=min(self.timeout, 4.0))
        for task in self._tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await self.flush()
        with contextlib.suppress(Exception):
            await self._release_ready()
        await self.poster.close()

    def kick(self) -> None:
        """New deliveries were committed: claim without waiting for the next poll."""
        self._wake.set()

    @property
    def free(self) -> int:
        """Sends that could start now, beyond those already leased for them."""
        return self.max_in_flight - self._senders - len(self._ready)

    # Claiming.

    def _room(self, *, ahead: bool, finishing: Sequence[Outcome] = ()) -> _Room:
        """Room for leases: for the free sending slots, or ``ahead`` up to ``MAX_LEASED``
        (``AHEAD`` times the sends and each subscription's share), counting the leases of
        ``finishing`` (written back in the same transaction) as over."""
        if ahead:
            leased = collections.Counter(self._leased)
            leased.subtract(o.claimed.subscription_id for o in finishing)
            free = AHEAD * self.max_in_flight - leased.total()
            return _Room(free, dict(leased), AHEAD * self.per_subscription)
        return _Room(self.free, dict(self._leased), self.per_subscription)

    def _pick(self, candidates: list[Candidate], room: _Room) -> list[Candidate]:
        chosen: list[Candidate] = []
        taken: collections.Counter[str] = collections.Counter()
        for candidate in candidates:
            if len(chosen) >= room.free:
                break
            sub = candidate.subscription_id
            if room.leased.get(sub, 0) + taken[sub] >= room.cap:
                continue
            taken[sub] += 1
            chosen.append(candidate)
        return chosen

    async def claim(self, *, ahead: bool = False) -> list[Claimed]:
        """Lease due deliveries (for the free sending slots, or ``ahead`` of the sends): SKIP
        LOCKED on PostgreSQL, a conditional UPDATE on SQLite."""
        return await self._claim(self._room(ahead=ahead))

    async def _claim(self, room: _Room) -> list[Claimed]:
        if room.free <= 0:
            return []
        self._wake.clear()
        self._quiet.looking()
        now, db = self.runtime.clock.now(), self.runtime.db
        if self.postgres:
            claim = await db.write_on_driver(functools.partial(self._claim_in, now=now, room=room))
        else:
            # SQLite: read the candidates without the write lock; the lease is conditional.
            candidates = await db.read_on_driver(
                functools.partial(self._candidates, now=now, room=room)
            )
            if not candidates:
                self._more = False
                return []
            more = len(candidates) >= room.free
            leased = await db.write_on_driver(
                functools.partial(self._lease, candidates=candidates, now=now, room=room)
            )
            claim = _Claim(leased, more)
        self._more = claim.more
        return claim.leased

    def _claim_in(self, runner: Runner, *, now: dt.datetime, room: _Room) -> _Claim:
        """Read the candidates and lease them through ``runner``, a write transaction."""
        candidates = self._candidates(runner, now=now, room=room)
        more = len(candidates) >= room.free
        leased = self._lease(runner, candidates=candidates, now=now, room=room)
        return _Claim(leased, more)

    def _candidates(self, runner: Runner, *, now: dt.datetime, room: _Room) -> list[Candidate]:
        saturated = [s for s, n in room.leased.items() if n >= room.cap]
        return queue.due_candidates(runner, now=now, limit=room.free, exclude=saturated)

    def _lease(
        self, runner: Runner, *, candidates: list[Candidate], now: dt.datetime, room: _Room
    ) -> list[Claimed]:
        if not candidates:
            return []
        until = now + dt.timedelta(seconds=self.lease_seconds)
        token = secrets.token_hex(8)
        return queue.lease(runner, self._pick(candidates, room), now=now, until=until, token=token)

    async def _release_ready(self) -> None:
        """Give back the leases of deliveries never sent (shutting down), so another sender
        takes them now rather than when their leases run out."""
        ready, self._ready = list(self._ready), collections.deque()
        if ready:
            await self.runtime.db.write_on_driver(functools.partial(queue.release, items=ready))

    # Sending.

    def start(self, claimed: list[Claimed]) -> None:
        """Queue ``claimed`` (leased by this sender) and start sends in every free slot."""
        for item in claimed:
            self._leased[item.subscription_id] += 1
            if not item.active:
                self._done.append(
                    Outcome(item, self.runtime.clock.now(), error="paused", sent=False)
                )
                continue
            self._ready.append(item)
        while self._senders < self.max_in_flight:
            first = self._next()
            if first is None:
                break
            task = asyncio.create_task(self._send(first))
            self._senders += 1
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _next(self) -> Claimed | None:
        """The oldest queued delivery whose subscription has a sending slot free and whose
        lease still covers a send and its write-back."""
        if self._closing:
            return None
        now = self.runtime.clock.now()
        index = 0
        while index < len(self._ready):
            item = self._ready[index]
            sub = item.subscription_id
            if self._sending[sub] >= self.per_subscription:
                index += 1
                continue
            del self._ready[index]
            if item.until - self.send_margin < now:
                _count_down(self._leased, sub)  # another sender takes it once its lease ends
                continue
            self._sending[sub] += 1
            return item
        return None

    async def _send(self, first: Claimed) -> None:
        """Send ``first``, then each next queued delivery a slot allows, until none is left."""
        item: Claimed | None = first
        try:
            while item is not None:
                sub = item.subscription_id
                outcome: Outcome | None = None
                try:
                    outcome = await self.poster.post(item, self.runtime.clock.now())
                finally:
                    # Cancelled mid-request (shutting down): record nothing, so the lease
                    # expires and the same attempt is sent again, exactly as after a crash.
                    _count_down(self._sending, sub)
                    if outcome is not None:
                        self._done.append(outcome)
                    self._progress.set()
                    self._poll_at = 0.0  # a slot is free again, maybe of a capped subscription
                item = self._next()
                if len(self._done) >= self.max_in_flight // 4:
                    self._hungry.set()  # a batch to write back, and its room to lease again
        finally:
            self._senders -= 1

    # Completing.

    async def flush(self) -> int:
        """Write every finished attempt back in one transaction; returns how many."""
        count = len(self._done)
        await self._complete(room=None)
        return count

    async def _complete(self, *, room: _Room | None) -> list[Claimed]:
        """Write every finished attempt back and, given ``room`` (reckoned with those attempts'
        leases as over), lease into it in the same transaction (one transaction a tick while
        busy); returns what was leased."""
        done, self._done = self._done, []
        if not done:
            return await self._claim(room) if room is not None else []
        writes = Writes.of(done, now=self.runtime.clock.now(), delays=self.delays)
        try:
            leased = await self._transact(writes, room=room)
        except Exception:
            self._done = done + self._done
            raise
        for outcome in done:  # written back: their leases are over
            _count_down(self._leased, outcome.claimed.subscription_id)
        return leased

    async def _transact(self, w: Writes, *, room: _Room | None) -> list[Claimed]:
        if room is not None:
            self._wake.clear()
        claimed = await self.runtime.db.write_on_driver(
            functools.partial(self._write_back, w=w, room=room)
        )
        if claimed is None:
            return []
        self._more = claimed.more
        return claimed.leased

    def _write_back(self, runner: Runner, *, w: Writes, room: _Room | None) -> _Claim | None:
        """The tick's one unit of work: the outcomes (a subscription deleted while its
        delivery was in flight leaves nothing to update or log, decision 0221), then (given
        ``room``) the next claim."""
        queue.finish_deliveries(runner, w.finished)
        queue.record_attempts(runner, w.attempts)
        queue.touch(
            runner,
            fired=sorted(w.fired),
            succeeded=sorted(w.succeeded - set(w.failures)),
            now=w.now,
        )
        for subscription_id, (reset, count) in w.failures.items():
            self._add_failures(runner, subscription_id, reset, count, w.now)
        if room is None:
            return None
        return self._claim_in(runner, now=self.runtime.clock.now(), room=room)

    def _add_failures(
        self, runner: Runner, subscription_id: str, reset: bool, count: int, now: dt.datetime
    ) -> None:
        paused = queue.add_failures(
            runner,
            subscription_id,
            count=count,
            reset_first=reset,
            pause_at=service.PAUSE_AFTER_FAILURES,
        )
        if paused:
            log.warning(
                "webhook subscription %s paused after %d consecutive failures",
                subscription_id,
                service.PAUSE_AFTER_FAILURES,
            )
            queue.fail_pending(runner, subscription_id, now=now, reason="subscription paused")

    # Driving.

    async def finished(self, count: int) -> None:
        """Wait until ``count`` attempts have finished and await ``flush`` (tests, scripts)."""
        while len(self._done) < count:
            self._progress.clear()
            if len(self._done) < count:
                await self._progress.wait()

    async def drain(self) -> None:
        """Wait for every send in flight to finish (outcomes still need ``flush``)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks))

    async def pass_once(self) -> int:
        """One claim, every claimed delivery sent, outcomes recorded; returns the count."""
        claimed = await self.claim()
        self.start(claimed)
        await self.drain()
        await self.flush()
        return len(claimed)

    async def _idle_timeout(self) -> float:
        poll = self._idle_poll
        due = await self.runtime.db.read(queue.next_due)
        self._quiet.found_nothing(due)
        if due is None:
            return poll
        wait = (due - self.runtime.clock.now()).total_seconds()
        return max(0.0, min(poll, wait))

    async def prune(self) -> int:
        days = self.runtime.settings.webhook_log_retention_days
        before = self.runtime.clock.now() - dt.timedelta(days=days)
        return await retention.prune(self.runtime.db, before=before)

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``: write outcomes back and refill free slots once per tick while busy;
        when idle, sleep until the next due retry, a wake-up or the poll interval."""
        listener = asyncio.create_task(self._listen(stop)) if self.postgres else None
        next_prune = time.monotonic()
        try:
            while not stop.is_set():
                try:
                    await self._tick()
                    if time.monotonic() >= next_prune:
                        next_prune = time.monotonic() + PRUNE_EVERY
                        await self.prune()
                except Exception:
                    log.exception("webhook sender pass failed; retrying")
                    self._poll_at = time.monotonic() + 1.0
                    await self._wait(stop, 1.0)
                    continue
                if self._tasks or self._done:
                    await self._wait(stop, TICK, busy=True)
                elif not self._more:
                    await self._wait(stop, max(0.0, self._poll_at - time.monotonic()))
        finally:
            if listener is not None:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener

    async def _tick(self) -> None:
        self._hungry.clear()
        due = self._wake.is_set() or self._more or self._poll_due()
        room = self._room(ahead=True, finishing=self._done)  # what this tick writes back is over
        claiming = room.free > 0 and due
        if claiming and self._done:
            # The claim in a transaction of its own, before the write-back: the sends have the
            # next batch while the outcomes are written back, not after (decision 0219).
            await self._claimed(await self._claim(room))
            await self._complete(room=None)
            return
        await self._claimed(await self._complete(room=room if claiming else None), claiming)

    def _poll_due(self) -> bool:
        """Whether the poll interval is up and the poll could find something: not while the
        database is unchanged since a claim found nothing and no retry has come due
        (decision 0222); then the next poll is an interval later."""
        if time.monotonic() < self._poll_at:
            return False
        if self._tasks or self._ready or not self._quiet.holds(self.runtime.clock.now()):
            return True
        self._poll_at = time.monotonic() + self._idle_poll
        return False

    async def _claimed(self, claimed: list[Claimed], claiming: bool = True) -> None:
        """Start what a claim leased; after a claim that found nothing, poll later."""
        self.start(claimed)
        if claimed:
            self._quiet.forget()
        if claiming and not claimed and not self._more:
            if self._tasks or self._ready:
                # What is due may belong to subscriptions at their cap: a finishing send
                # re-opens the claim (see ``_send``), so do not poll meanwhile.
                self._poll_at = time.monotonic() + IDLE_POLL_POSTGRES
            else:
                self._poll_at = time.monotonic() + await self._idle_timeout()

    async def _wait(self, stop: asyncio.Event, seconds: float, *, busy: bool = False) -> None:
        """Sleep up to ``seconds``; ``stop``, new deliveries (given room to lease them) or,
        when ``busy``, a batch of finished sends (a quarter of the slots) end it early."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        waiters = [asyncio.create_task(stop.wait())]
        if self._room(ahead=True).free > 0:  # else new work can wait a tick
            waiters.append(asyncio.create_task(self._wake.wait()))
        if busy:
            waiters.append(asyncio.create_task(self._hungry.wait()))
        try:
            await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def _listen(self, stop: asyncio.Event) -> None:
        """LISTEN for NOTIFYs of other processes' commits; reconnect when the link drops."""
        await listen(
            self.runtime.db.url,
            service.NOTIFY_CHANNEL,
            lambda *_: self.kick(),
            stop,
            on_up=lambda _conn: self.kick(),  # catch up on what was committed meanwhile
            name="webhook LISTEN",
        )


async def deliver_due(runtime: Runtime) -> int:
    """One claim-and-send pass, for tests and scripts; returns the deliveries attempted."""
    async with Sender(runtime) as sender:
        return await sender.pass_once()


async def sender(runtime: Runtime, stop: asyncio.Event) -> None:
    """The long-running webhook sender worker."""
    async with Sender(runtime) as worker:
        await worker.run(stop)
