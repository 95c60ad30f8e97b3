"""Bridge reports about outbound calls: answered, AI started, transferred, ended."""

from __future__ import annotations

import datetime as dt
import logging

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.bridge.protocol import Callback, EndedFields
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.platform.calls import repository
from switchboard.platform.calls.models import (
    CANCELLED,
    DISPATCHING,
    IN_FLIGHT,
    RETRY_PENDING,
    Call,
)
from switchboard.platform.calls.service._email import queue_attempt_email
from switchboard.platform.calls.service._inbound import apply_inbound
from switchboard.platform.calls.service._rules import (
    NUMBER_DOES_NOT_EXIST,
    SOURCE,
    checked_outcome,
    ended_reason,
    status_after_attempt,
)
from switchboard.platform.calls.service._turns import turns_of
from switchboard.platform.events import catalogue as ev
from switchboard.platform.transcripts.service import TranscriptInput, save_transcript
from switchboard.platform.webhooks.outbox import emit
from switchboard.runtime import Runtime

log = logging.getLogger("switchboard.calls")


class NotReady(Conflict):
    """The event names an attempt the platform has not finished dialling yet (409; the bridge
    retries)."""

    code = "not_ready"


async def apply_bridge_event(session: AsyncSession, *, runtime: Runtime, event: Callback) -> bool:
    """Apply one bridge callback; False when it was a duplicate or stale (nothing changed)."""
    if event.type.startswith("inbound-"):
        return await apply_inbound(session, runtime=runtime, event=event)
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
        if event.transfer_type not in ("", "outbound-to-user"):  # spec 6.2: an outbound source
            raise BadRequest("transferType: an outbound call is transferred outbound-to-user")
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
    call.duration_sec = ended.talk_sec
    call.sip_status = ended.sip_status
    if call.status == CANCELLED:
        # The API ended it: the outcome is ``cancelled`` whatever the bridge saw last.
        outcome, error_detail = "cancelled", ended.error_detail
        call.outcome = outcome
    else:
        outcome, error_detail = checked_outcome(ended.outcome, ended.error_detail)
        # a number that does not exist (SIP 404, 484, 604) is final: retrying cannot help
        retries_left = 0 if ended.sip_status in NUMBER_DOES_NOT_EXIST else call.retries_left
        call.status = status_after_attempt(
            outcome=outcome, error_detail=error_detail, answered=answered,
            retries_left=retries_left,
        )  # fmt: skip
        call.outcome = outcome
        call.ended_at = now
        call.ended_reason = ended_reason(outcome, error_detail)
        if call.status == RETRY_PENDING:
            call.due_at = now + dt.timedelta(minutes=call.retry_delay_minutes)
    call.error_detail = error_detail[:500]
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
    file = ""
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
                turns=turns_of(ended),
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
    await queue_attempt_email(
        session, runtime=runtime, call=call, tenant_name=tenant, outcome=outcome, ended=ended,
        transcript_file=file,
    )  # fmt: skip
    log.info(
        "call %s attempt %d ended: %s -> %s",
        call.call_id,
        attempt,
        outcome or "failed",
        call.status,
    )
    return True
