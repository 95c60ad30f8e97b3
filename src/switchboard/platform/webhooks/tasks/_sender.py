"""The sender's driver: claims with leases, starts the sends, writes outcomes back per tick."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import functools
import logging
import secrets
import time
from dataclasses import dataclass
from types import TracebackType

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from switchboard.kit.listen import listen
from switchboard.platform.webhooks import repository, service
from switchboard.platform.webhooks.destinations import parse_networks
from switchboard.platform.webhooks.repository import Candidate, Claimed
from switchboard.platform.webhooks.tasks._outcomes import Outcome, Writes
from switchboard.platform.webhooks.tasks._post import Poster
from switchboard.runtime import Runtime

log = logging.getLogger("switchboard.webhooks")

MAX_IN_FLIGHT = 128
PER_SUBSCRIPTION = 32
IDLE_POLL_SQLITE = 0.05
IDLE_POLL_POSTGRES = 2.0
TICK = 0.01  # while sends are in flight, outcomes are written and slots refilled per tick
PRUNE_EVERY = 3600.0


@dataclass(frozen=True, slots=True)
class _Room:
    """The slots a claim may fill, as they stood when the tick began: on SQLite the tick's
    statements run on the writer thread while sends go on finishing on the event loop."""

    free: int
    in_flight: dict[str, int]


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
        self.postgres = runtime.db.dialect == "postgresql"
        self.poster = Poster(
            box=runtime.box, allow=self.allow, timeout=self.timeout, limit=max_in_flight
        )
        self._in_flight: collections.Counter[str] = collections.Counter()
        self._tasks: set[asyncio.Task[None]] = set()
        self._done: list[Outcome] = []
        self._wake = asyncio.Event()  # new deliveries were committed
        self._progress = asyncio.Event()  # a send finished
        self._more = True  # the last claim was full: more may be due right now
        self._poll_at = 0.0

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
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=min(self.timeout, 4.0))
        for task in self._tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await self.flush()
        await self.poster.close()

    def kick(self) -> None:
        """New deliveries were committed: claim without waiting for the next poll."""
        self._wake.set()

    @property
    def free(self) -> int:
        return self.max_in_flight - len(self._tasks)

    # Claiming.

    def _room(self) -> _Room:
        return _Room(self.free, dict(self._in_flight))

    def _pick(self, candidates: list[Candidate], room: _Room) -> list[Candidate]:
        chosen: list[Candidate] = []
        taken: collections.Counter[str] = collections.Counter()
        for candidate in candidates:
            if len(chosen) >= room.free:
                break
            sub = candidate.subscription_id
            if room.in_flight.get(sub, 0) + taken[sub] >= self.per_subscription:
                continue
            taken[sub] += 1
            chosen.append(candidate)
        return chosen

    async def claim(self) -> list[Claimed]:
        """Lease due deliveries: SKIP LOCKED on PostgreSQL, a conditional UPDATE on SQLite."""
        if self.free <= 0:
            return []
        self._wake.clear()
        now, room, db = self.runtime.clock.now(), self._room(), self.runtime.db
        if self.postgres:
            claim = await db.write(functools.partial(self._claim_in, now=now, room=room))
        else:
            # SQLite: read the candidates without the write lock; the lease is conditional.
            candidates = await db.read(functools.partial(self._candidates, now=now, room=room))
            if not candidates:
                self._more = False
                return []
            more = len(candidates) >= room.free * 2
            leased = await db.write(
                functools.partial(self._lease, candidates=candidates, now=now, room=room)
            )
            claim = _Claim(leased, more)
        self._more = claim.more
        return claim.leased

    def _claim_in(self, session: Session, *, now: dt.datetime, room: _Room) -> _Claim:
        """Read the candidates and lease them in ``session``, a write transaction."""
        candidates = self._candidates(session, now=now, room=room)
        more = len(candidates) >= room.free * 2
        leased = self._lease(session, candidates=candidates, now=now, room=room)
        return _Claim(leased, more)

    def _candidates(self, session: Session, *, now: dt.datetime, room: _Room) -> list[Candidate]:
        saturated = [s for s, n in room.in_flight.items() if n >= self.per_subscription]
        return repository.due_candidates(session, now=now, limit=room.free * 2, exclude=saturated)

    def _lease(
        self, session: Session, *, candidates: list[Candidate], now: dt.datetime, room: _Room
    ) -> list[Claimed]:
        if not candidates:
            return []
        until = now + dt.timedelta(seconds=self.lease_seconds)
        token = secrets.token_hex(8)
        return repository.lease(
            session, self._pick(candidates, room), now=now, until=until, token=token
        )

    # Sending.

    def start(self, claimed: list[Claimed]) -> None:
        for item in claimed:
            if not item.active:
                self._done.append(
                    Outcome(item, self.runtime.clock.now(), error="paused", sent=False)
                )
                continue
            self._in_flight[item.subscription_id] += 1
            task = asyncio.create_task(self._send(item))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, item: Claimed) -> None:
        cancelled = False
        try:
            outcome = await self.poster.post(item, self.runtime.clock.now())
        except asyncio.CancelledError:
            # Shutting down mid-request: record nothing, so the lease expires and the same
            # attempt is sent again, exactly as after a crash.
            cancelled = True
            raise
        finally:
            self._in_flight[item.subscription_id] -= 1
            if self._in_flight[item.subscription_id] <= 0:
                del self._in_flight[item.subscription_id]
            if not cancelled:
                self._done.append(outcome)
            self._progress.set()
            self._poll_at = 0.0  # a slot is free again, maybe of a saturated subscription

    # Completing.

    async def flush(self) -> int:
        """Write every finished attempt back in one transaction; returns how many."""
        count = len(self._done)
        await self._complete(claim=False)
        return count

    async def _complete(self, *, claim: bool) -> list[Claimed]:
        """Write every finished attempt back and, when ``claim``, lease the next deliveries in
        the same transaction (one transaction a tick while busy); returns what was leased."""
        done, self._done = self._done, []
        if not done:
            return await self.claim() if claim else []
        writes = Writes.of(done, now=self.runtime.clock.now(), delays=self.delays)
        try:
            try:
                return await self._transact(writes, claim=claim)
            except IntegrityError:
                # A subscription was deleted while its delivery was in flight: write what
                # still exists (the rare path pays one more query).
                return await self._transact(writes, claim=claim, check=True)
        except Exception:
            self._done = done + self._done
            raise

    async def _transact(self, w: Writes, *, claim: bool, check: bool = False) -> list[Claimed]:
        room = None
        if claim and self.free > 0:
            self._wake.clear()
            room = self._room()
        claimed = await self.runtime.db.write(
            functools.partial(self._write_back, w=w, room=room, check=check)
        )
        if claimed is None:
            return []
        self._more = claimed.more
        return claimed.leased

    def _write_back(
        self, session: Session, *, w: Writes, room: _Room | None, check: bool
    ) -> _Claim | None:
        """The tick's one unit of work: the outcomes, then (given ``room``) the next claim."""
        if check:
            w = w.still_existing(session)
        repository.record_attempts(session, w.attempts)
        repository.finish_deliveries(session, w.finished)
        repository.touch(
            session,
            fired=sorted(w.fired),
            succeeded=sorted(w.succeeded - set(w.failures)),
            now=w.now,
        )
        for subscription_id, (reset, count) in w.failures.items():
            self._add_failures(session, subscription_id, reset, count, w.now)
        if room is None:
            return None
        return self._claim_in(session, now=self.runtime.clock.now(), room=room)

    def _add_failures(
        self, session: Session, subscription_id: str, reset: bool, count: int, now: dt.datetime
    ) -> None:
        paused = repository.add_failures(
            session,
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
            repository.fail_pending(session, subscription_id, now=now, reason="subscription paused")

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
        poll = IDLE_POLL_POSTGRES if self.postgres else IDLE_POLL_SQLITE
        due = await self.runtime.db.read(repository.next_due)
        if due is None:
            return poll
        wait = (due - self.runtime.clock.now()).total_seconds()
        return max(0.0, min(poll, wait))

    async def prune(self) -> int:
        days = self.runtime.settings.webhook_log_retention_days
        before = self.runtime.clock.now() - dt.timedelta(days=days)
        async with self.runtime.db.transaction() as session:
            return await repository.prune(session, before=before)

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
                    await self._wait(stop, TICK)
                elif not self._more:
                    await self._wait(stop, max(0.0, self._poll_at - time.monotonic()))
        finally:
            if listener is not None:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener

    async def _tick(self) -> None:
        due = self._wake.is_set() or self._more or time.monotonic() >= self._poll_at
        claiming = self.free > 0 and due
        claimed = await self._complete(claim=claiming)
        self.start(claimed)
        if claiming and not claimed and not self._more:
            if self._in_flight:
                # What is due may belong to subscriptions at their cap: a finishing send
                # re-opens the claim (see ``_send``), so do not poll meanwhile.
                self._poll_at = time.monotonic() + IDLE_POLL_POSTGRES
            else:
                self._poll_at = time.monotonic() + await self._idle_timeout()

    async def _wait(self, stop: asyncio.Event, seconds: float) -> None:
        """Sleep up to ``seconds``; new deliveries or ``stop`` end it early."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        waiters = [asyncio.create_task(stop.wait())]
        if self.free > 0:  # a full sender has nothing to claim: new work can wait a tick
            waiters.append(asyncio.create_task(self._wake.wait()))
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
