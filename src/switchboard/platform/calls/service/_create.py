"""Creating, reading and hanging up outbound calls."""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session as SyncSession

from switchboard.auth.bearer import Caller
from switchboard.kit.db import Database, after_commit
from switchboard.kit.errors import ApiError, BadRequest, NotFound
from switchboard.platform.bridging.client import BridgeClient, bridge_for
from switchboard.platform.calls import repository
from switchboard.platform.calls.models import (
    CANCELLED,
    DISPATCHING,
    IN_FLIGHT,
    RETRY_PENDING,
    SCHEDULED,
    Call,
)
from switchboard.platform.calls.schemas import CallCreate, CallCreated, HangupResult
from switchboard.platform.calls.service._rules import (
    dial_request,
    in_flight_values,
    new_call_id,
)
from switchboard.platform.routing.matching import OutboundIndex
from switchboard.platform.routing.service import outbound_index_now, outbound_index_read
from switchboard.platform.whitelist.service import add_number_now, is_whitelisted_now, listed
from switchboard.runtime import Runtime
from switchboard.tenants.config import TenantConfig

log = logging.getLogger("switchboard.calls")


@dataclass(frozen=True, slots=True)
class _Draft:
    """What the reads decided: the call as it will be stored, and whether its number was on
    the whitelist when read."""

    call: Call
    tenant_name: str
    config: TenantConfig
    whitelisted: bool


async def create_call(
    session: AsyncSession, *, runtime: Runtime, caller: Caller, body: CallCreate, owner: str
) -> CallCreated:
    """Validate, route, dial (unless scheduled), then whitelist and store, all in the session's
    transaction: a bridge failure raises before anything is written, and the transaction rolls
    back, so nothing is left."""
    bridge = bridge_for(runtime)  # 503 before anything is touched
    draft = await session.run_sync(_draft, runtime=runtime, caller=caller, body=body, owner=owner)
    reply = await _ask_bridge(bridge, draft, runtime=runtime, owner=owner)
    return await session.run_sync(_store, draft=draft, reply=reply)


async def create_call_after_dial(
    db: Database, *, runtime: Runtime, caller: Caller, body: CallCreate, owner: str
) -> CallCreated:
    """``create_call`` with its reads in a read-only transaction and its writes in a write
    transaction begun after the bridge answered (decision 0931): on SQLite no request holds the
    database's write lock across the dial, so requests dial concurrently. Nothing is written
    before the bridge accepted the call, so a 502/503 still leaves nothing stored."""
    bridge = bridge_for(runtime)
    # One statement reads the tenant, its whitelist and its outbound table's revision (on
    # SQLite one thread hand-off; on PostgreSQL sent on the driver, decision 0999); the
    # compiled outbound table is then cached for that revision, so nothing more is read.
    context = await repository.context(db, caller.tenant_id)
    if context is None:
        raise NotFound("tenant not found")
    index = await outbound_index_read(
        db, tenant_id=caller.tenant_id, revision=context.outbound_revision
    )
    draft = _drafted(context, index, runtime=runtime, caller=caller, body=body, owner=owner)
    reply = await _ask_bridge(bridge, draft, runtime=runtime, owner=owner)
    if draft.whitelisted:  # one statement, the INSERT (decisions 0993, 0999)
        await repository.insert_one(db, draft.call)
        return _created(draft, reply=reply, whitelist_added=False, whitelist_error=None)
    # One write unit of work: on SQLite one hand-off to the writer thread (BEGIN IMMEDIATE,
    # the statements, COMMIT) instead of several per statement through aiosqlite.
    return await db.write(functools.partial(_store, draft=draft, reply=reply))


def _draft(
    session: SyncSession, *, runtime: Runtime, caller: Caller, body: CallCreate, owner: str
) -> _Draft:
    """The reads in a session: the tenant's configuration, the trunks, the whitelist."""
    context = repository.context_now(session, caller.tenant_id)  # one statement for every read
    if context is None:
        raise NotFound("tenant not found")
    index = outbound_index_now(
        session, tenant_id=caller.tenant_id, revision=context.outbound_revision
    )
    return _drafted(context, index, runtime=runtime, caller=caller, body=body, owner=owner)


def _drafted(
    context: repository.Context,
    index: OutboundIndex,
    *,
    runtime: Runtime,
    caller: Caller,
    body: CallCreate,
    owner: str,
) -> _Draft:
    """The call as it will be stored, from what was read; nothing is read or written."""
    tenant_id = caller.tenant_id
    config = TenantConfig.from_settings(context.settings)
    now = runtime.clock.now()
    schedule_at = body.schedule_at()
    if schedule_at is not None and schedule_at > now + dt.timedelta(days=366):
        raise BadRequest("scheduleAtUtc: at most one year ahead")

    call = Call(
        call_id=new_call_id(),
        tenant_id=tenant_id,
        requested_by=caller.username,
        phone=body.phone,
        display_name=body.display_name or body.phone,
        email=body.email,
        voice=body.voice or config.default_voice,
        language=body.language or config.default_language,
        model=body.model or config.default_model,
        system_prompt_sealed=runtime.box.seal(body.system_prompt),
        api_key_sealed=runtime.box.seal(body.api_key),
        max_seconds=body.max_seconds,
        retry_delay_minutes=body.retry_delay_minutes,
        attempt=1,
        retries_left=body.retries,
        trunk_ids=[],
        trunk_id="",
        status=SCHEDULED if schedule_at is not None else DISPATCHING,
        created_at=now,
        scheduled_for=schedule_at,
        due_at=schedule_at,
        lease_owner=None if schedule_at is not None else owner,
        lease_until=None
        if schedule_at is not None
        else now + dt.timedelta(seconds=runtime.settings.call_lease_seconds),
        ended_reason="",
        outcome="",
        duration_sec=0,
        transcript_path="",
        error_detail="",
        sip_status=0,
        attempt_open=False,
        dial_failures=0,
        bridge_reply="",
    )

    trunks = index.resolve(body.phone, config.default_trunk_id)
    call.trunk_ids = list(trunks)
    call.trunk_id = trunks[0] if trunks else ""
    try:
        whitelisted = listed(context.whitelist, body.phone)
    except ApiError:
        whitelisted = False  # ``_store`` tries again and reports the error
    return _Draft(call, context.tenant_name, config, whitelisted)


async def _ask_bridge(bridge: BridgeClient, draft: _Draft, *, runtime: Runtime, owner: str) -> str:
    """Dial an immediate call (a scheduled one checks the bridge's health), before the first
    write: a refusal leaves nothing to undo, and no database lock is held across the network
    round trip. Returns the bridge's reply."""
    call = draft.call
    if call.status == SCHEDULED:
        reply = await bridge.health()
        call.bridge_reply = reply[:4000]
        return reply
    reply = await bridge.dial(
        dial_request(
            call,
            tenant_name=draft.tenant_name,
            config=draft.config,
            runtime=runtime,
            callback_url=bridge.callback_url,
        )
    )
    for key, value in in_flight_values(
        max_seconds=call.max_seconds, now=call.created_at, runtime=runtime, owner=owner,
        reply=reply,
    ).items():  # fmt: skip
        setattr(call, key, value)
    return reply


def _store(session: SyncSession, *, draft: _Draft, reply: str) -> CallCreated:
    """The writes: the number onto the whitelist (unless it was on it), then the call.
    Synchronous, so that it runs as one unit of work (``Database.write``)."""
    call = draft.call
    whitelist_added, whitelist_error = False, None
    try:
        # A number already on the list needs no write (and no lock on the tenant's list); one
        # that was not is looked up again here, in the writing transaction.
        if not draft.whitelisted and not is_whitelisted_now(
            session, tenant_id=call.tenant_id, number=call.phone
        ):
            whitelist_added, _count = add_number_now(
                session,
                tenant_id=call.tenant_id,
                number=call.phone,
                comment=f"outbound AI call {call.call_id}",
            )
    except ApiError as exc:
        whitelist_error = exc.description
    repository.insert_now(session, call)
    return _created(
        draft, reply=reply, whitelist_added=whitelist_added, whitelist_error=whitelist_error
    )


def _created(
    draft: _Draft, *, reply: str, whitelist_added: bool, whitelist_error: str | None
) -> CallCreated:
    call = draft.call
    log.info("call %s created for tenant %s (%s)", call.call_id, draft.tenant_name, call.status)
    return CallCreated(
        ok=True,
        call_id=call.call_id,
        tenant=draft.tenant_name,
        whitelist_added=whitelist_added,
        whitelist_error=whitelist_error,
        bridge_reply=reply,
    )


async def get_call(session: AsyncSession, *, tenant_id: int, call_id: str) -> Call:
    call = await repository.get(session, tenant_id=tenant_id, call_id=call_id)
    if call is None:
        raise NotFound(f"no call {call_id!r}")
    return call


async def list_calls(
    db: Database, *, tenant_id: int, statuses: Sequence[str], limit: int, offset: int
) -> tuple[list[tuple[Any, ...]], int]:
    """A page of the tenant's call records' values and the total, in a read of its own."""
    return await db.read(functools.partial(
        repository.page, tenant_id=tenant_id, statuses=statuses, limit=limit, offset=offset
    ))  # fmt: skip


async def hangup(
    session: AsyncSession, *, runtime: Runtime, tenant_id: int, call_id: str, actor: str
) -> HangupResult:
    """Spec 3.1: cancel a scheduled, pending, dispatching or in-flight call; a no-op on an
    ended one. An in-flight call is terminated at the bridge once the cancellation commits."""
    call = await get_call(session, tenant_id=tenant_id, call_id=call_id)
    now = runtime.clock.now()
    active = (SCHEDULED, RETRY_PENDING, DISPATCHING, IN_FLIGHT)
    changed = await repository.guarded_update(
        session,
        pk=call.id,
        where=[Call.status.in_(active)],
        values={
            "status": CANCELLED,
            "ended_at": now,
            "ended_reason": "cancelled",
            "outcome": "cancelled",
            "due_at": None,
            "cancelled_by": actor,
        },
    )
    fresh = await repository.system_by_pk(session, call.id)
    assert fresh is not None
    call = fresh
    if not changed:
        return HangupResult(
            ok=True, call_id=call.call_id, new_status=call.status, actor=actor, was_noop=True
        )
    if call.attempt_open:
        attempt, cid = call.attempt, call.call_id

        async def terminate() -> None:
            try:
                await bridge_for(runtime).hangup(call_id=cid, attempt=attempt, actor=actor)
            except ApiError as exc:
                # The watchdog closes the attempt if the bridge never reports its end.
                log.warning("hangup of %s not delivered to the bridge: %s", cid, exc.description)

        after_commit(session, terminate)
    log.info("call %s cancelled by %s", call.call_id, actor)
    return HangupResult(ok=True, call_id=call.call_id, new_status=CANCELLED, actor=actor)
