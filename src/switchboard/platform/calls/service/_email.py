"""The outcome email of an ended attempt, queued in the transaction that ended it."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.bridge.protocol import EndedFields
from switchboard.platform.calls.models import Call
from switchboard.platform.calls.service._turns import turns_of
from switchboard.platform.emails.service import AttemptSummary, SpokenTurn, queue_outcome_email
from switchboard.platform.transcripts.service import file_bytes
from switchboard.runtime import Runtime


async def queue_attempt_email(
    session: AsyncSession,
    *,
    runtime: Runtime,
    call: Call,
    tenant_name: str,
    outcome: str,
    ended: EndedFields,
    transcript_file: str,
) -> None:
    """The email to the call's ``email`` address: outcome, times, trunk, and the transcript
    this attempt saved (``transcript_file``, empty when it saved none)."""
    if not runtime.settings.smtp_host:
        return
    attachment = b""
    if transcript_file:
        attachment = await file_bytes(
            data_dir=runtime.settings.data_dir, tenant_name=tenant_name, file=transcript_file
        )
    turns = [SpokenTurn(t.speaker, t.text, t.ts) for t in turns_of(ended)] if attachment else []
    summary = AttemptSummary(
        call_id=call.call_id,
        attempt=call.attempt,
        recipient=call.email,
        phone=call.phone,
        display_name=call.display_name,
        status=call.status,
        outcome=outcome,
        error_detail=call.error_detail,
        trunk_id=call.trunk_id,
        requested_by=call.requested_by,
        created=call.created_at,
        dispatched=call.dispatched_at,
        answered=call.answered_at,
        ended=call.ended_at or runtime.clock.now(),
        duration_sec=call.duration_sec,
        turns=turns,
        transcript_file=transcript_file if attachment else "",
        transcript_bytes=attachment,
    )
    await queue_outcome_email(session, runtime=runtime, tenant_id=call.tenant_id, summary=summary)
