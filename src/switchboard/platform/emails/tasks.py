"""The outcome email sender: claims due emails with a lease, submits them over SMTP, records
each try in the delivery log; 4 tries (retry delays ``SWITCHBOARD_EMAIL_RETRY_DELAYS``), and an
SMTP 5xx answer fails the email at once (retrying would be refused again)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import secrets

from switchboard.platform.emails import repository
from switchboard.platform.emails.models import FAILED, PENDING, SENT, OutcomeEmailAttempt
from switchboard.platform.emails.smtp import SmtpConfig, SmtpFailure, send
from switchboard.runtime import Runtime

log = logging.getLogger("switchboard.emails")

MAX_TRIES = 4
BATCH = 20
POLL_SECONDS = 1.0


def _lease_seconds(runtime: Runtime) -> float:
    return 2 * runtime.settings.smtp_timeout + 5


async def send_due(runtime: Runtime, *, limit: int = BATCH) -> int:
    """Claim the due emails and try each once; returns how many were tried."""
    settings = runtime.settings
    if not settings.smtp_host:
        return 0
    now = runtime.clock.now()
    token = secrets.token_hex(8)
    async with runtime.db.transaction() as session:
        claimed = await repository.system_claim(
            session,
            now=now,
            until=now + dt.timedelta(seconds=_lease_seconds(runtime)),
            token=token,
            limit=limit,
            skip_locked=runtime.db.dialect == "postgresql",
        )
        work = [(e.id, e.tenant_id, e.recipient, e.message, e.tries) for e in claimed]
    config = SmtpConfig.from_settings(settings)
    delays = settings.email_retry_delays or (60.0,)
    for email_id, tenant_id, recipient, message, tries in work:
        started = runtime.clock.now()
        failure: SmtpFailure | None = None
        try:
            await asyncio.to_thread(send, config, recipient=recipient, message=message)
        except SmtpFailure as exc:
            failure = exc
        number = tries + 1
        done = runtime.clock.now()
        values: dict[str, object] = {"tries": number}
        if failure is None:
            values.update(status=SENT, completed_at=done, last_error=None)
        elif failure.permanent or number >= MAX_TRIES:
            values.update(status=FAILED, completed_at=done, last_error=failure.description)
        else:
            delay = delays[min(number - 1, len(delays) - 1)]
            values.update(
                status=PENDING,
                next_attempt_at=done + dt.timedelta(seconds=delay),
                last_error=failure.description,
            )
        async with runtime.db.transaction() as session:
            await repository.system_finish(
                session,
                email_id=email_id,
                token=token,
                values=values,
                attempt=OutcomeEmailAttempt(
                    tenant_id=tenant_id,
                    email_id=email_id,
                    try_number=number,
                    started_at=started,
                    smtp_code=failure.code if failure else 250,
                    error=failure.description if failure else None,
                ),
            )
        if failure is not None:
            log.warning(
                "outcome email %s, try %d failed: %s", email_id, number, failure.description
            )
    return len(work)


async def email_sender(runtime: Runtime, stop: asyncio.Event) -> None:
    """The long-running outcome email sender."""
    while not stop.is_set():
        tried = 0
        try:
            tried = await send_due(runtime)
        except Exception:
            log.exception("outcome email pass failed")
        if tried >= BATCH:
            continue
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=POLL_SECONDS)
