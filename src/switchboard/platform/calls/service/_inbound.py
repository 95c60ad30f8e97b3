"""Inbound calls reported by the bridge (virtual numbers and the SIP receptionist)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.bridge.protocol import Callback, EndedFields
from switchboard.kit.errors import BadRequest, NotFound
from switchboard.platform.calls import repository
from switchboard.platform.calls.models import InboundCall
from switchboard.platform.calls.service._rules import checked_outcome
from switchboard.platform.calls.service._turns import turns_of
from switchboard.platform.events import catalogue as ev
from switchboard.platform.numbers.service import find_number
from switchboard.platform.transcripts.service import TranscriptInput, save_transcript
from switchboard.platform.webhooks.outbox import emit
from switchboard.runtime import Runtime


async def apply_inbound(session: AsyncSession, *, runtime: Runtime, event: Callback) -> bool:
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
        if event.transfer_type == "outbound-to-user":  # spec 6.2: that one is an outbound call's
            raise BadRequest("transferType: an inbound call is transferred vnum-to-*")
        if not await repository.guarded_inbound_update(
            session,
            pk=row.id,
            where=[Inbound.transferred_at.is_(None)],
            values={"transferred_at": now},
        ):
            return False
        # Spec 6.2: toUser names a SIP or extension target, toPhone a PSTN one.
        target = (
            {"toPhone": event.to_phone}
            if event.to_phone and not event.to_user
            else {"toUser": event.to_user or "reception"}
        )
        default_type = "vnum-to-pstn" if "toPhone" in target else "vnum-to-officetab"
        await publish(ev.CALL_TRANSFERRED, {
            "callId": row.call_id, "fromVnum": row.number, **target,
            "transferType": event.transfer_type or default_type, "room": row.room,
            "source": "vnum",
        })  # fmt: skip
        return True
    if event.type == "inbound-ended":
        ended = event.ended or EndedFields()
        outcome, error_detail = checked_outcome(ended.outcome, ended.error_detail)
        if not await repository.guarded_inbound_update(
            session,
            pk=row.id,
            where=[Inbound.ended_at.is_(None)],
            values={"ended_at": now, "outcome": outcome},
        ):
            return False
        await publish(ev.CALL_ENDED, {
            "callId": row.call_id, "number": row.number, "room": row.room,
            "outcome": outcome, "durationSec": ended.talk_sec,
            "tokens": ended.tokens_total, "source": "sip" if sip else "vnum",
        })  # fmt: skip
        save = True
        if not sip:
            number = await find_number(session, tenant_id=row.tenant_id, number=row.number)
            save = number is None or number.save_transcripts
        if save and ended.turns:
            # A browser's call (vnum) has no SIP answer: the AI peer answers it when it connects.
            answered = row.answered_at if sip else row.ai_started_at
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
                    started=started, answered=answered,
                    ended=started + dt.timedelta(seconds=ended.talk_sec),
                    outcome=outcome, error_detail=error_detail,
                    tokens_prompt=ended.tokens_prompt, tokens_total=ended.tokens_total,
                    input_turns=ended.input_turns, output_turns=ended.output_turns,
                    turns=turns_of(ended),
                ),
                data_dir=runtime.settings.data_dir,
                clock=runtime.clock,
            )  # fmt: skip
            await publish(ev.TRANSCRIPT_SAVED, {
                "callId": row.call_id, "number": row.number, "file": file,
                "outcome": outcome, "source": "vnum",
            })  # fmt: skip
        return True
    raise BadRequest(f"unknown event type {event.type!r}")
