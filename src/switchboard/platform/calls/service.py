"""Outbound call rules: creation, the status machine (docs/calls.md), hangup, bridge events.

Every transition is an atomic guarded UPDATE (``repository.guarded_update``) followed by the
events it causes, in the same transaction: a duplicate or late bridge event changes nothing and
emits nothing, and a rollback drops both.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.bridge.client import bridge_for
from switchboard.bridge.protocol import Callback, DialRequest, EndedFields
from switchboard.identity.bearer import Caller
from switchboard.kit.clock import iso_utc, parse_iso_utc
from switchboard.kit.db import after_commit
from switchboard.kit.errors import ApiError, BadRequest, Conflict, NotFound
from switchboard.platform.calls import repository
from switchboard.platform.calls.models import Call, InboundCall
from switchboard.platform.calls.repository import (
    DISPATCHING,
    IN_FLIGHT,
    RETRY_PENDING,
    SCHEDULED,
)
from switchboard.platform.calls.schemas import CallCreate, CallCreated, CallRecord, HangupResult
from switchboard.platform.events import catalogue as ev
from switchboard.platform.events.service import emit
from switchboard.platform.numbers.service import find_number
from switchboard.platform.routing.service import resolve_outbound
from switchboard.platform.transcripts.service import TranscriptInput, Turn, save_transcript
from switchboard.platform.whitelist.service import add_number, is_whitelisted
from switchboard.runtime import Runtime
from switchboard.tenants.config import TenantConfig
from switchboard.tenants.models import Tenant

log = logging.getLogger("switchboard.calls")

ENDED_SUCCESS = "ended-success"
ENDED_FINAL = "ended-failed-final"
CANCELLED = "cancelled"
STATUSES = (
    SCHEDULED, DISPATCHING, IN_FLIGHT, ENDED_SUCCESS, RETRY_PENDING, ENDED_FINAL, CANCELLED,
)  # fmt: skip
ENDED_STATUSES = frozenset({ENDED_SUCCESS, ENDED_FINAL, CANCELLED})
SUCCESS_OUTCOMES = frozenset({"finished", "transferred", "max-duration"})
RETRY_OUTCOMES = frozenset({"no-answer"})
NUMBER_DOES_NOT_EXIST = frozenset({404, 484, 604})  # SIP statuses: never retried
# How long a callee may ring before the bridge must have reported the end of the attempt,
# on top of maxSeconds and the watchdog grace.
RING_ALLOWANCE_SEC = 60
SOURCE = "outbound-ai"


def new_call_id() -> str:
    return "oac-" + secrets.token_hex(6)


def status_after_attempt(
    *, outcome: str, error_detail: str, answered: bool, retries_left: int
) -> str:
    """The status machine's rule for an attempt that ended (docs/calls.md).

    Success: finished, transferred, max-duration (without a technical error). Retry, while
    retries remain: no-answer, and a technical failure before anyone answered (errorDetail
    filled, no outcome). Everything else is final.
    """
    if outcome in SUCCESS_OUTCOMES and not error_detail:
        return ENDED_SUCCESS
    retryable = outcome in RETRY_OUTCOMES or (not outcome and bool(error_detail) and not answered)
    if retryable and retries_left > 0:
        return RETRY_PENDING
    return ENDED_FINAL


def ended_reason(outcome: str, error_detail: str) -> str:
    return outcome or ("failed" if error_detail else "ended")


def parse_statuses(raw: str | None) -> list[str]:
    if not raw:
        return []
    wanted = [part.strip() for part in raw.split(",") if part.strip()]
    unknown = [s for s in wanted if s not in STATUSES]
    if unknown:
        raise BadRequest(
            f"status: unknown value(s) {', '.join(unknown)}; one of {', '.join(STATUSES)}"
        )
    return wanted


def record(call: Call, tenant_name: str) -> CallRecord:
    return CallRecord(
        call_id=call.call_id,
        tenant=tenant_name,
        requested_by=call.requested_by,
        phone=call.phone,
        display_name=call.display_name,
        email=call.email,
        voice=call.voice,
        language=call.language,
        model=call.model,
        status=call.status,
        created_at_utc=iso_utc(call.created_at) or "",
        scheduled_for_utc=iso_utc(call.scheduled_for),
        dispatched_at_utc=iso_utc(call.dispatched_at) or "",
        answered_at_utc=iso_utc(call.answered_at) or "",
        ended_at_utc=iso_utc(call.ended_at),
        ended_reason=call.ended_reason,
        duration_sec=call.duration_sec,
        trunk_id=call.trunk_id,
        transcript_path=call.transcript_path,
        error_detail=call.error_detail,
        sip_status=call.sip_status,
        attempt=call.attempt,
        retries_left=call.retries_left,
        retry_delay_minutes=call.retry_delay_minutes,
    )


def dial_request(
    call: Call, *, tenant_name: str, runtime: Runtime, callback_url: str
) -> DialRequest:
    return DialRequest(
        call_id=call.call_id,
        attempt=call.attempt,
        tenant=tenant_name,
        phone=call.phone,
        display_name=call.display_name,
        trunk_ids=list(call.trunk_ids),
        voice=call.voice,
        language=call.language,
        model=call.model,
        max_seconds=call.max_seconds,
        system_prompt=runtime.box.open(call.system_prompt_sealed),
        api_key=runtime.box.open(call.api_key_sealed),
        callback_url=callback_url,
    )


def in_flight_values(
    *, max_seconds: int, now: dt.datetime, runtime: Runtime, owner: str, reply: str
) -> dict[str, object]:
    """Columns of a call whose attempt the bridge accepted."""
    grace = runtime.settings.call_watchdog_grace_seconds
    return {
        "status": IN_FLIGHT,
        "attempt_open": True,
        "dispatched_at": now,
        "due_at": None,
        "lease_owner": owner,
        "lease_until": now + dt.timedelta(seconds=runtime.settings.call_lease_seconds),
        "deadline_at": now + dt.timedelta(seconds=max_seconds + RING_ALLOWANCE_SEC + grace),
        "bridge_reply": reply[:4000],
        "error_detail": "",
        "sip_status": 0,
        "dial_failures": 0,
    }


# Creating, reading, hanging up ---------------------------------------------------------------


async def create_call(
    session: AsyncSession, *, runtime: Runtime, caller: Caller, body: CallCreate, owner: str
) -> CallCreated:
    """Validate, route, dial (unless scheduled), then whitelist and store, all in the request's
    transaction: a bridge failure raises before anything is written, and the transaction rolls
    back, so nothing is left."""
    bridge = bridge_for(runtime)  # 503 before anything is touched
    tenant = await session.get(Tenant, caller.tenant_id)
    if tenant is None:
        raise NotFound("tenant not found")
    config = TenantConfig.from_settings(tenant.settings or {})
    now = runtime.clock.now()
    schedule_at = body.schedule_at()
    if schedule_at is not None and schedule_at > now + dt.timedelta(days=366):
        raise BadRequest("scheduleAtUtc: at most one year ahead")

    call = Call(
        call_id=new_call_id(),
        tenant_id=tenant.id,
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

    trunks = await resolve_outbound(
        session, tenant_id=tenant.id, number=body.phone, default_trunk_id=config.default_trunk_id
    )
    call.trunk_ids = list(trunks)
    call.trunk_id = trunks[0] if trunks else ""

    # The bridge is asked before the first write: a refusal leaves the transaction untouched,
    # and no database lock is held across the network round trip.
    if schedule_at is None:
        reply = await bridge.dial(
            dial_request(
                call, tenant_name=tenant.name, runtime=runtime, callback_url=bridge.callback_url
            )
        )
        for key, value in in_flight_values(
            max_seconds=call.max_seconds, now=now, runtime=runtime, owner=owner, reply=reply
        ).items():
            setattr(call, key, value)
    else:
        reply = await bridge.health()
        call.bridge_reply = reply[:4000]

    whitelist_added, whitelist_error = False, None
    try:
        # A number already on the list needs no write (and no lock on the tenant's list).
        if not await is_whitelisted(session, tenant_id=tenant.id, number=body.phone):
            whitelist_added, _count = await add_number(
                session,
                tenant_id=tenant.id,
                number=body.phone,
                comment=f"outbound AI call {call.call_id}",
            )
    except ApiError as exc:
        whitelist_error = exc.description
    repository.add(session, call)
    await session.flush()
    log.info("call %s created for tenant %s (%s)", call.call_id, tenant.name, call.status)
    return CallCreated(
        ok=True,
        call_id=call.call_id,
        tenant=tenant.name,
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
    session: AsyncSession, *, tenant_id: int, statuses: Sequence[str], limit: int, offset: int
) -> tuple[list[Call], int]:
    return await repository.page(
        session, tenant_id=tenant_id, statuses=statuses, limit=limit, offset=offset
    )


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


# Bridge events -------------------------------------------------------------------------------


class NotReady(Conflict):
    """The event names an attempt the platform has not finished dialling yet (409; the bridge
    retries)."""

    code = "not_ready"


async def apply_bridge_event(session: AsyncSession, *, runtime: Runtime, event: Callback) -> bool:
    """Apply one bridge callback; False when it was a duplicate or stale (nothing changed)."""
    if event.type.startswith("inbound-"):
        return await _apply_inbound(session, runtime=runtime, event=event)
    call = await repository.system_by_call_id(session, event.call_id)
    if call is None:
        raise NotFound(f"no call {event.call_id!r}")
    if call.attempt == event.attempt and call.status == DISPATCHING:
        raise NotReady("the attempt is still being dialled; retry shortly")
    if event.type == "ended":
        return await close_attempt(
            session, runtime=runtime, call=call, attempt=event.attempt,
            ended=event.ended or EndedFields(),
        )  # fmt: skip
    now = runtime.clock.now()
    live = [
        Call.attempt == event.attempt,
        Call.attempt_open.is_(True),
        Call.status == IN_FLIGHT,
    ]
    tenant = await repository.tenant_name(session, call.tenant_id)
    if event.type == "answered":
        values: dict[str, object] = {"answered_at": now}
        if event.trunk_id:
            values["trunk_id"] = event.trunk_id
        if not await repository.guarded_update(
            session, pk=call.id, where=[*live, Call.answered_at.is_(None)], values=values
        ):
            return False
        await _emit(session, runtime, call, tenant, ev.CALL_ANSWERED, {
            "callId": call.call_id,
            "phone": call.phone,
            "displayName": call.display_name,
            "trunkId": event.trunk_id or call.trunk_id,
            "direction": "outbound",
            "source": SOURCE,
            "answerMs": event.answer_ms,
        })  # fmt: skip
        return True
    if event.type == "ai-started":
        if not await repository.guarded_update(
            session,
            pk=call.id,
            where=[
                *live,
                Call.ai_started_at.is_(None),
                Call.answered_at.is_not(None),
            ],
            values={"ai_started_at": now},
        ):
            return False
        await _emit(session, runtime, call, tenant, ev.CALL_STARTED, {
            "callId": call.call_id,
            "phone": call.phone,
            "displayName": call.display_name,
            "direction": "outbound",
            "source": SOURCE,
        })  # fmt: skip
        return True
    if event.type == "transferred":
        if not await repository.guarded_update(
            session,
            pk=call.id,
            where=[*live, Call.transferred_at.is_(None)],
            values={"transferred_at": now},
        ):
            return False
        data: dict[str, object] = {
            "callId": call.call_id,
            "fromOutbound": call.call_id,
            "fromPhone": call.phone,
        }
        if event.to_user:
            data["toUser"] = event.to_user
        if event.to_phone:
            data["toPhone"] = event.to_phone
        data["transferType"] = event.transfer_type or "outbound-to-user"
        data["trunkId"] = event.trunk_id or call.trunk_id
        data["source"] = SOURCE
        await _emit(session, runtime, call, tenant, ev.CALL_TRANSFERRED, data)
        return True
    raise BadRequest(f"unknown event type {event.type!r}")


async def _emit(
    session: AsyncSession,
    runtime: Runtime,
    call: Call,
    tenant: str,
    name: str,
    data: dict[str, object],
) -> None:
    await emit(
        session, tenant_id=call.tenant_id, tenant_name=tenant, event=name, data=data,
        clock=runtime.clock,
    )  # fmt: skip


def _turns(ended: EndedFields) -> list[Turn]:
    turns = []
    for turn in ended.turns:
        try:
            ts = parse_iso_utc(turn.ts)
        except ValueError:
            continue
        turns.append(Turn(speaker=turn.speaker, text=turn.text, ts=ts))
    return turns


async def close_attempt(
    session: AsyncSession, *, runtime: Runtime, call: Call, attempt: int, ended: EndedFields
) -> bool:
    """End the current attempt exactly once: status per the machine, ``outbound-ai.finished``,
    then the transcript and ``transcript.saved`` when the callee answered."""
    now = runtime.clock.now()
    if not await repository.guarded_update(
        session,
        pk=call.id,
        where=[Call.attempt == attempt, Call.attempt_open.is_(True)],
        values={
            "attempt_open": False,
            "lease_owner": None,
            "lease_until": None,
            "deadline_at": None,
        },
    ):
        return False
    fresh = await repository.system_by_pk(session, call.id)
    assert fresh is not None
    call = fresh
    answered = ended.answered or call.answered_at is not None
    outcome = ended.outcome
    call.duration_sec = ended.talk_sec
    call.error_detail = ended.error_detail[:500]
    call.sip_status = ended.sip_status
    if call.status == CANCELLED:
        outcome = outcome or "cancelled"
        call.outcome = outcome
    else:
        # a number that does not exist (SIP 404, 484, 604) is final: retrying cannot help
        retries_left = 0 if ended.sip_status in NUMBER_DOES_NOT_EXIST else call.retries_left
        call.status = status_after_attempt(
            outcome=outcome, error_detail=ended.error_detail, answered=answered,
            retries_left=retries_left,
        )  # fmt: skip
        call.outcome = outcome
        call.ended_at = now
        call.ended_reason = ended_reason(outcome, ended.error_detail)
        if call.status == RETRY_PENDING:
            call.due_at = now + dt.timedelta(minutes=call.retry_delay_minutes)
    await session.flush()
    tenant = await repository.tenant_name(session, call.tenant_id)
    await _emit(session, runtime, call, tenant, ev.OUTBOUND_AI_FINISHED, {
        "callId": call.call_id,
        "phone": call.phone,
        "displayName": call.display_name,
        "outcome": outcome,
        "answered": answered,
        "talkSec": ended.talk_sec,
        "trunk": call.trunk_id,
        "inputTurns": ended.input_turns,
        "outputTurns": ended.output_turns,
        "errorDetail": call.error_detail,
    })  # fmt: skip
    if answered and ended.turns:
        started = call.answered_at or call.dispatched_at or now
        file = await save_transcript(
            session,
            tenant_id=call.tenant_id,
            tenant_name=tenant,
            data=TranscriptInput(
                call_id=call.call_id,
                caller_source=SOURCE,
                requested_by=call.requested_by,
                phone=call.phone,
                display_name=call.display_name,
                email=call.email,
                number="",
                rule=call.display_name,
                voice=call.voice,
                language=call.language,
                model=call.model,
                trunk_id=call.trunk_id,
                started=started,
                answered=call.answered_at or started,
                ended=started + dt.timedelta(seconds=ended.talk_sec),
                outcome=outcome,
                error_detail=call.error_detail,
                tokens_prompt=ended.tokens_prompt,
                tokens_total=ended.tokens_total,
                input_turns=ended.input_turns,
                output_turns=ended.output_turns,
                turns=_turns(ended),
            ),
            data_dir=runtime.settings.data_dir,
            clock=runtime.clock,
        )
        call.transcript_path = file
        await session.flush()
        await _emit(session, runtime, call, tenant, ev.TRANSCRIPT_SAVED, {
            "callId": call.call_id,
            "phone": call.phone,
            "displayName": call.display_name,
            "file": file,
            "outcome": outcome,
            "source": SOURCE,
        })  # fmt: skip
    log.info(
        "call %s attempt %d ended: %s -> %s",
        call.call_id,
        attempt,
        outcome or "failed",
        call.status,
    )
    return True


# Inbound calls (virtual numbers and the SIP receptionist) ------------------------------------


async def _apply_inbound(session: AsyncSession, *, runtime: Runtime, event: Callback) -> bool:
    now = runtime.clock.now()
    row = await repository.system_inbound(session, event.call_id)
    if row is None:
        tenant = await repository.tenant_by_name(session, event.tenant)
        if tenant is None:
            raise NotFound(f"no tenant {event.tenant!r}")
        if event.source not in ("vnum", "sip", "office-tab"):
            raise BadRequest("source: 'vnum', 'sip' or 'office-tab'")
        row = InboundCall(
            call_id=event.call_id, tenant_id=tenant.id, source=event.source, number=event.number,
            from_number=event.from_number, room=event.room, started_at=now, outcome="",
        )  # fmt: skip
        session.add(row)
        await session.flush()
    tenant_name = await repository.tenant_name(session, row.tenant_id)
    sip = row.source in ("sip", "office-tab")  # SIP legs; office-tab rang a user's phone
    Inbound = InboundCall  # noqa: N806 (a short alias for the guards)

    async def publish(name: str, data: dict[str, object]) -> None:
        await emit(
            session, tenant_id=row.tenant_id, tenant_name=tenant_name, event=name, data=data,
            clock=runtime.clock,
        )  # fmt: skip

    if event.type == "inbound-answered":
        if not await repository.guarded_inbound_update(
            session, pk=row.id, where=[Inbound.answered_at.is_(None)], values={"answered_at": now}
        ):
            return False
        await publish(ev.CALL_ANSWERED, {
            "callId": row.call_id, "did": row.number, "fromNumber": row.from_number,
            "direction": "inbound", "source": "ai-live", "answerMs": event.answer_ms,
        })  # fmt: skip
        return True
    if event.type == "inbound-ai-started":
        if not await repository.guarded_inbound_update(
            session,
            pk=row.id,
            where=[Inbound.ai_started_at.is_(None)],
            values={"ai_started_at": now},
        ):
            return False
        data: dict[str, object] = {"callId": row.call_id, "number": row.number}
        if sip:
            data["did"] = row.number
        else:
            data["room"] = row.room
        data["direction"] = "inbound"
        data["source"] = "ai-live" if sip else "vnum"
        await publish(ev.CALL_STARTED, data)
        return True
    if event.type == "inbound-transferred":
        if not await repository.guarded_inbound_update(
            session,
            pk=row.id,
            where=[Inbound.transferred_at.is_(None)],
            values={"transferred_at": now},
        ):
            return False
        await publish(ev.CALL_TRANSFERRED, {
            "callId": row.call_id, "fromVnum": row.number, "toUser": event.to_user or "reception",
            "transferType": event.transfer_type or "vnum-to-officetab", "room": row.room,
            "source": "vnum",
        })  # fmt: skip
        return True
    if event.type == "inbound-ended":
        ended = event.ended or EndedFields()
        if not await repository.guarded_inbound_update(
            session,
            pk=row.id,
            where=[Inbound.ended_at.is_(None)],
            values={"ended_at": now, "outcome": ended.outcome},
        ):
            return False
        await publish(ev.CALL_ENDED, {
            "callId": row.call_id, "number": row.number, "room": row.room,
            "outcome": ended.outcome, "durationSec": ended.talk_sec,
            "tokens": ended.tokens_total, "source": "sip" if sip else "vnum",
        })  # fmt: skip
        save = True
        if not sip:
            number = await find_number(session, tenant_id=row.tenant_id, number=row.number)
            save = number is None or number.save_transcripts
        if save and ended.turns:
            started = row.answered_at or row.started_at
            file = await save_transcript(
                session,
                tenant_id=row.tenant_id,
                tenant_name=tenant_name,
                data=TranscriptInput(
                    call_id=row.call_id, caller_source=row.source, requested_by="",
                    phone=row.from_number, display_name=event.display_name, email="",
                    number=row.number, rule=event.rule or event.display_name or row.number,
                    voice=event.voice, language=event.language, model=event.model, trunk_id="",
                    started=started, answered=row.answered_at,
                    ended=started + dt.timedelta(seconds=ended.talk_sec),
                    outcome=ended.outcome, error_detail=ended.error_detail,
                    tokens_prompt=ended.tokens_prompt, tokens_total=ended.tokens_total,
                    input_turns=ended.input_turns, output_turns=ended.output_turns,
                    turns=_turns(ended),
                ),
                data_dir=runtime.settings.data_dir,
                clock=runtime.clock,
            )  # fmt: skip
            await publish(ev.TRANSCRIPT_SAVED, {
                "callId": row.call_id, "number": row.number, "file": file,
                "outcome": ended.outcome, "source": "vnum",
            })  # fmt: skip
        return True
    raise BadRequest(f"unknown event type {event.type!r}")
