"""Composing the outcome email and queueing it in the caller's transaction.

The message holds the outcome, the times, the duration, the trunk and the transcript (its turns
in the body, its file attached). It never holds the system prompt or the AI key: it is built
only from the fields of ``AttemptSummary`` and the transcript file, which carry neither.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY
from email.utils import format_datetime, formataddr, make_msgid

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import iso_utc
from switchboard.platform.emails import repository
from switchboard.platform.emails.models import PENDING, OutcomeEmail, OutcomeEmailAttempt
from switchboard.runtime import Runtime
from switchboard.tenants.config import TenantConfig
from switchboard.tenants.models import Tenant


@dataclass(frozen=True, slots=True)
class SpokenTurn:
    speaker: str
    text: str
    ts: dt.datetime


@dataclass(frozen=True, slots=True)
class AttemptSummary:
    """What the email reports about one ended attempt of an outbound call."""

    call_id: str
    attempt: int
    recipient: str
    phone: str
    display_name: str
    status: str
    outcome: str
    error_detail: str
    trunk_id: str
    requested_by: str
    created: dt.datetime
    dispatched: dt.datetime | None
    answered: dt.datetime | None
    ended: dt.datetime
    duration_sec: int
    turns: Sequence[SpokenTurn] = ()
    transcript_file: str = ""
    transcript_bytes: bytes = b""


def _when(value: dt.datetime | None, missing: str) -> str:
    return iso_utc(value) or missing if value is not None else missing


def _duration(seconds: int) -> str:
    minutes, rest = divmod(max(0, seconds), 60)
    return f"{minutes} min {rest} s ({seconds} s)" if minutes else f"{rest} s"


def body_text(summary: AttemptSummary) -> str:
    outcome = summary.outcome or "none (technical failure)"
    lines = [
        f"Outbound AI call {summary.call_id}, attempt {summary.attempt}",
        "",
        f"Outcome:    {outcome}",
    ]
    if summary.error_detail:
        lines.append(f"Error:      {summary.error_detail}")
    lines += [
        f"Status:     {summary.status}",
        f"Phone:      {summary.phone}",
        f"Name:       {summary.display_name}",
        f"Trunk:      {summary.trunk_id or '-'}",
        f"Requested:  {_when(summary.created, '-')} by {summary.requested_by}",
        f"Dialled:    {_when(summary.dispatched, '-')}",
        f"Answered:   {_when(summary.answered, 'not answered')}",
        f"Ended:      {_when(summary.ended, '-')}",
        f"Duration:   {_duration(summary.duration_sec)}",
        "",
    ]
    if summary.turns:
        lines.append(f"Transcript ({summary.transcript_file} is attached):")
        lines.append("")
        for turn in summary.turns:
            stamp = turn.ts.astimezone(dt.UTC).strftime("%H:%M:%S")
            lines.append(f"[{stamp}] {turn.speaker}: {turn.text}")
    else:
        lines.append("No transcript: nobody spoke with the AI on this attempt.")
    return "\n".join(lines) + "\n"


def compose(summary: AttemptSummary, *, sender: str, sender_name: str, now: dt.datetime) -> bytes:
    message = EmailMessage()
    message["From"] = formataddr((sender_name, sender))
    message["To"] = summary.recipient
    subject_outcome = summary.outcome or "technical failure"
    # the label is checked when the call is placed (calls.schemas.LABEL_RE); one stored before
    # that check must still make a header
    label = " ".join(summary.display_name.split())
    message["Subject"] = f"Call to {label} ({summary.phone}): {subject_outcome}"
    message["Date"] = format_datetime(now.astimezone(dt.UTC))
    domain = sender.rpartition("@")[2] or "localhost"
    message["Message-ID"] = make_msgid(
        idstring=f"{summary.call_id}.{summary.attempt}", domain=domain
    )
    message["X-Switchboard-Call-Id"] = summary.call_id
    message.set_content(body_text(summary))
    if summary.transcript_bytes:
        message.add_attachment(
            summary.transcript_bytes,
            maintype="application",
            subtype="json",
            filename=summary.transcript_file,
        )
    # SMTP lines end in CRLF; smtplib sends bytes as they are.
    return message.as_bytes(policy=SMTP_POLICY)


async def queue_outcome_email(
    session: AsyncSession, *, runtime: Runtime, tenant_id: int, summary: AttemptSummary
) -> OutcomeEmail | None:
    """Write the attempt's email to the outbox in the caller's transaction; None when SMTP is
    not configured or the tenant turned the email off."""
    if not runtime.settings.smtp_host or not summary.recipient:
        return None
    tenant = await session.get(Tenant, tenant_id)
    if tenant is None:
        return None
    config = TenantConfig.from_settings(tenant.settings)
    if not config.outcome_email:
        return None
    now = runtime.clock.now()
    row = OutcomeEmail(
        id=uuid.uuid4().hex,
        tenant_id=tenant_id,
        call_id=summary.call_id,
        attempt=summary.attempt,
        recipient=summary.recipient,
        message=compose(
            summary,
            sender=runtime.settings.smtp_sender,
            sender_name=config.outcome_email_sender_name or tenant.name,
            now=now,
        ),
        status=PENDING,
        tries=0,
        created_at=now,
        next_attempt_at=now,
    )
    repository.add(session, row)
    await session.flush()
    return row


async def delivery_log(
    session: AsyncSession, *, tenant_id: int, call_id: str
) -> list[tuple[OutcomeEmail, list[OutcomeEmailAttempt]]]:
    """The outcome emails of one call with their tries, oldest first."""
    emails = await repository.emails_for_call(session, tenant_id=tenant_id, call_id=call_id)
    tries = await repository.attempts_of(
        session, tenant_id=tenant_id, email_ids=[e.id for e in emails]
    )
    return [(e, [t for t in tries if t.email_id == e.id]) for e in emails]
