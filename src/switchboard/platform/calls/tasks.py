"""Background work of outbound calls: the dispatcher, the watchdog and reconciliation.

One pass of each is a plain function (``dispatch_due``, ``dispatch_if_due``, ``watchdog_pass``,
``reconcile``), which tests call directly; ``dispatcher_worker`` loops over them in
``switchboard worker`` and in ``serve``.

Leases: a call being dialled, and an attempt in flight, carry the id of the process that dialled
it (``lease_owner``) and an expiry (``lease_until``) that the process renews while it lives. An
expired dialling lease is claimed again and the same attempt redialled (dials are idempotent per
``callId`` and ``attempt`` at the bridge); an expired in-flight lease is reconciled with the
bridge's own view of the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import secrets
import socket

from switchboard.bridge.protocol import DialRequest, EndedFields, StatusReply
from switchboard.kit.changes import Quiet
from switchboard.kit.db import after_commit
from switchboard.kit.errors import ApiError
from switchboard.platform.bridging.client import bridge_for, close_bridge
from switchboard.platform.calls import repository, service
from switchboard.platform.calls.models import DISPATCHING, Call
from switchboard.runtime import Runtime
from switchboard.tenants.config import TenantConfig

log = logging.getLogger("switchboard.calls.dispatcher")

PROCESS_OWNER = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
CLAIM_BATCH = 200
DIAL_CONCURRENCY = 32
POLL_SECONDS = 0.2
MAX_DIAL_FAILURES = 8
LOST_DETAIL = "the bridge no longer knows this call (bridge or worker restarted)"
WATCHDOG_DETAIL = "the bridge did not report the end of the call within maxSeconds plus grace"


def _lease(runtime: Runtime, now: dt.datetime) -> dt.datetime:
    return now + dt.timedelta(seconds=runtime.settings.call_lease_seconds)


def _dial_backoff(failures: int) -> dt.timedelta:
    return dt.timedelta(seconds=min(600, 15 * 2 ** max(0, failures - 1)))


async def dispatch_due(
    runtime: Runtime, *, owner: str = PROCESS_OWNER, limit: int = CLAIM_BATCH
) -> int:
    """Claim the due calls (scheduled, retries, abandoned dials) and dial each once; returns
    how many were claimed."""
    now = runtime.clock.now()
    async with runtime.db.transaction() as session:
        claimed = await repository.system_claim_due(
            session, now=now, owner=owner, lease_until=_lease(runtime, now), limit=limit
        )
    if not claimed:
        return 0
    try:
        bridge = bridge_for(runtime)
    except ApiError as exc:
        for pk in claimed:
            await _dial_failed(runtime, pk, owner, exc.description)
        return len(claimed)
    # One read, the dials side by side, one write: three commits per batch, not two per call.
    async with runtime.db.transaction() as session:
        calls = await repository.system_by_pks(session, claimed)
        tenants = {
            tid: await repository.tenant_by_id(session, tid) for tid in {c.tenant_id for c in calls}
        }
        mine = [c for c in calls if c.status == DISPATCHING and c.lease_owner == owner]
        requests = [
            (
                c.id,
                c.max_seconds,
                service.dial_request(
                    c, tenant_name=tenants[c.tenant_id].name,
                    config=TenantConfig.from_settings(tenants[c.tenant_id].settings),
                    runtime=runtime, callback_url=bridge.callback_url,
                ),
            )
            for c in mine
        ]  # fmt: skip
    gate = asyncio.Semaphore(DIAL_CONCURRENCY)

    async def one(request: DialRequest) -> str | ApiError:
        async with gate:
            try:
                return await bridge.dial(request)
            except ApiError as exc:
                return exc

    replies = await asyncio.gather(*(one(request) for _, _, request in requests))
    # One guarded UPDATE per (maxSeconds, attempt) group instead of one per call.
    groups: dict[tuple[int, int], list[int]] = {}
    for (pk, max_seconds, request), reply in zip(requests, replies, strict=True):
        if not isinstance(reply, ApiError):
            groups.setdefault((max_seconds, request.attempt), []).append(pk)
    accepted: set[int] = set()
    now = runtime.clock.now()
    async with runtime.db.transaction() as session:
        for (max_seconds, attempt), pks in groups.items():
            values = service.in_flight_values(
                max_seconds=max_seconds, now=now, runtime=runtime, owner=owner, reply=""
            )
            del values["bridge_reply"]
            accepted.update(
                await repository.system_mark_dialled(
                    session, pks=pks, owner=owner, attempt=attempt, values=values
                )
            )
    refused = [
        request
        for (pk, _, request), reply in zip(requests, replies, strict=True)
        if not isinstance(reply, ApiError) and pk not in accepted
    ]
    for (pk, _, _), reply in zip(requests, replies, strict=True):
        if isinstance(reply, ApiError):
            await _dial_failed(runtime, pk, owner, reply.description)
    for request in refused:
        # Cancelled while dialling: the bridge must not keep the call.
        log.info("call %s was cancelled while dialling; hanging up", request.call_id)
        try:
            await bridge.hangup(
                call_id=request.call_id, attempt=request.attempt, actor="dispatcher"
            )
        except ApiError as exc:
            log.warning("hangup of %s failed: %s", request.call_id, exc.description)
    return len(claimed)


async def _dial_failed(runtime: Runtime, pk: int, owner: str, detail: str) -> None:
    now = runtime.clock.now()
    async with runtime.db.transaction() as session:
        call = await repository.system_by_pk(session, pk)
        if call is None or call.status != DISPATCHING or call.lease_owner != owner:
            return
        failures = call.dial_failures + 1
        log.warning("dialling %s failed (%d): %s", call.call_id, failures, detail)
        if failures >= MAX_DIAL_FAILURES:
            call.attempt_open = True  # close_attempt ends it once, with its events
            await session.flush()
            await service.close_attempt(
                session, runtime=runtime, call=call, attempt=call.attempt,
                ended=EndedFields(error_detail=f"the media bridge did not take the call: {detail}"),
            )  # fmt: skip
            return
        call.dial_failures = failures
        call.error_detail = detail[:500]
        call.lease_owner = None
        call.lease_until = now + _dial_backoff(failures)


async def watchdog_pass(runtime: Runtime, *, limit: int = CLAIM_BATCH) -> int:
    """End attempts that outlived maxSeconds plus the ring allowance and the grace period."""
    now = runtime.clock.now()
    closed = 0
    async with runtime.db.transaction() as session:
        overdue = await repository.system_overdue(session, now=now, limit=limit)
    for pk in overdue:
        async with runtime.db.transaction() as session:
            call = await repository.system_by_pk(session, pk)
            if call is None or not call.attempt_open:
                continue
            answered = call.answered_at is not None
            talk = round((now - call.answered_at).total_seconds()) if call.answered_at else 0
            attempt, cid = call.attempt, call.call_id
            done = await service.close_attempt(
                session, runtime=runtime, call=call, attempt=attempt,
                ended=EndedFields(
                    answered=answered,
                    talk_sec=max(0, min(talk, call.max_seconds)), error_detail=WATCHDOG_DETAIL,
                ),
            )  # fmt: skip
            if done:
                closed += 1
                after_commit(session, _hangup_later(runtime, cid, attempt, "watchdog"))
    return closed


def _hangup_later(runtime: Runtime, call_id: str, attempt: int, actor: str):  # type: ignore[no-untyped-def]
    async def send() -> None:
        try:
            await bridge_for(runtime).hangup(call_id=call_id, attempt=attempt, actor=actor)
        except ApiError as exc:
            log.info("hangup of %s not delivered: %s", call_id, exc.description)

    return send


async def purge_idempotency_keys(runtime: Runtime) -> int:
    """Forget ``Idempotency-Key`` answers older than 24 hours."""
    async with runtime.db.transaction() as session:
        return await repository.system_purge_idempotency_keys(session, now=runtime.clock.now())


async def heartbeat(runtime: Runtime, *, owner: str = PROCESS_OWNER) -> int:
    now = runtime.clock.now()
    async with runtime.db.transaction() as session:
        return await repository.system_extend_leases(
            session, owner=owner, lease_until=_lease(runtime, now)
        )


async def _recover_events(runtime: Runtime, state: StatusReply) -> int:
    """Apply the attempt's events the bridge logged but the platform never recorded (their
    callbacks were lost while this call had no live worker or API): each is a guarded
    transition, so events already applied change nothing. The end is closed by the caller."""
    applied = 0
    for event in state.events:
        if event.type == "ended" or event.attempt != state.attempt:
            continue
        try:
            async with runtime.db.transaction() as session:
                applied += int(
                    await service.apply_bridge_event(session, runtime=runtime, event=event)
                )
        except ApiError as exc:
            log.info("recovering %s of %s: %s", event.type, event.call_id, exc.description)
    if applied:
        log.info("recovered %d event(s) of %s from the bridge", applied, state.call_id)
    return applied


async def reconcile(
    runtime: Runtime, *, owner: str = PROCESS_OWNER, limit: int = CLAIM_BATCH
) -> int:
    """Take over in-flight attempts whose dialling process stopped renewing its lease: ask the
    bridge; the events it logged that the platform missed are applied first; an attempt it no
    longer knows is closed (a technical failure), one it reports as ended is closed with the
    bridge's figures, a live one is kept under this process's lease."""
    now = runtime.clock.now()
    async with runtime.db.transaction() as session:
        orphans = await repository.system_orphaned(session, now=now, limit=limit)
    if not orphans:
        return 0
    try:
        bridge = bridge_for(runtime)
    except ApiError:
        return 0
    handled = 0
    for pk in orphans:
        async with runtime.db.transaction() as session:
            call = await repository.system_by_pk(session, pk)
            if (
                call is None
                or not call.attempt_open
                or call.lease_until is None
                or call.lease_until > now
            ):
                continue
            taken = await repository.guarded_update(
                session,
                pk=pk,
                where=[Call.attempt_open.is_(True), Call.lease_until <= now],
                values={"lease_owner": owner, "lease_until": _lease(runtime, now)},
            )
            attempt, cid = call.attempt, call.call_id
        if not taken:
            continue
        try:
            state = await bridge.status(call_id=cid, attempt=attempt)
        except ApiError as exc:
            log.warning("reconciling %s: bridge status failed: %s", cid, exc.description)
            continue
        if state.state != "unknown":
            await _recover_events(runtime, state)
        if state.state in ("ringing", "answered"):
            continue
        async with runtime.db.transaction() as session:
            call = await repository.system_by_pk(session, pk)
            if call is None:
                continue
            ended = (
                state.ended
                if state.state == "ended" and state.ended
                else EndedFields(answered=call.answered_at is not None, error_detail=LOST_DETAIL)
            )
            if await service.close_attempt(
                session, runtime=runtime, call=call, attempt=attempt, ended=ended
            ):
                handled += 1
                log.info("reconciled %s attempt %d (%s)", cid, attempt, state.state)
    return handled


async def dispatch_if_due(runtime: Runtime, quiet: Quiet) -> int:
    """``dispatch_due`` when a call may be due: not while nothing has been committed since a
    look found none due and the earliest one's time has not come (decision 0222). The look is
    a read, so an idle dispatcher does not write (a claim that found nothing would still be a
    write, and a change of its own)."""
    now = runtime.clock.now()
    if quiet.holds(now):
        return 0
    quiet.looking()
    due = await runtime.db.read(repository.system_next_due)
    if due is None or due > now:
        quiet.found_nothing(due)
        return 0
    quiet.forget()
    return await dispatch_due(runtime)


async def dispatcher_worker(runtime: Runtime, stop: asyncio.Event) -> None:
    """The dispatcher loop: heartbeat, reconcile, dispatch, watchdog, until ``stop``."""
    log.info("call dispatcher running as %s", PROCESS_OWNER)
    loop = asyncio.get_running_loop()
    upkeep_every = min(runtime.settings.call_lease_seconds / 3, 5.0)
    next_upkeep = 0.0
    quiet = Quiet(runtime.db.changes)
    while not stop.is_set():
        claimed = 0
        try:
            if loop.time() >= next_upkeep:
                # Leases, orphans and the watchdog move on the scale of the lease, not of a pass.
                next_upkeep = loop.time() + upkeep_every
                await heartbeat(runtime)
                await reconcile(runtime)
                await watchdog_pass(runtime)
                await purge_idempotency_keys(runtime)
            claimed = await dispatch_if_due(runtime, quiet)
        except Exception:
            log.exception("call dispatcher pass failed")
        if claimed >= CLAIM_BATCH:
            continue
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=POLL_SECONDS)
    await close_bridge(runtime)
