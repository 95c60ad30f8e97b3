"""The transcript and outcome email (spec 2.2 `email`): queued with the attempt's end, sent by
the workers over SMTP (STARTTLS, AUTH) to a real server, retried, logged; per-tenant switch."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from httpx import AsyncClient
from sqlalchemy import select

from switchboard.platform.emails import service as emails
from switchboard.platform.emails.models import OutcomeEmail
from switchboard.platform.emails.tasks import send_due
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants.models import Tenant
from tests.calls.conftest import Org
from tests.calls.helpers import PROMPT, place, settle
from tests.calls.smtpserver import PASSWORD, USER, Mailbox

API_KEY = "AIzaSy-test-key-123456"


@pytest.fixture
def settings(settings: Settings, mailbox: Mailbox, tmp_path: Path) -> Settings:
    password_file = tmp_path / "smtp-password"
    password_file.write_text(PASSWORD + "\n")
    return settings.model_copy(
        update={
            "smtp_host": "127.0.0.1",
            "smtp_port": mailbox.port,
            "smtp_security": "starttls",
            "smtp_user": USER,
            "smtp_password_file": password_file,
            "smtp_ca_file": tmp_path / "smtp-cert.pem",
            "smtp_sender": "calls@acme.test",
            "smtp_timeout": 5.0,
            "email_retry_delays": (60.0, 300.0, 1800.0),
        }
    )


async def _emails(runtime: Runtime) -> list[OutcomeEmail]:
    async with runtime.db.transaction() as session:
        return list(await session.scalars(select(OutcomeEmail).order_by(OutcomeEmail.created_at)))


async def test_an_answered_call_mails_outcome_times_and_transcript(
    app_client: AsyncClient, runtime: Runtime, org: Org, mailbox: Mailbox
) -> None:
    created = await place(
        app_client, org.headers, phone="+14155550100", displayName="Dr Smith",
        email="dana@example.com",
    )  # fmt: skip
    await settle(runtime)
    assert mailbox.received == []  # queued in the outbox, sent by the workers
    assert await send_due(runtime) == 1
    assert await send_due(runtime) == 0

    ((mail_from, rcpt, raw),) = mailbox.received
    assert (mail_from, rcpt) == ("calls@acme.test", ["dana@example.com"])
    assert mailbox.tls_used == [True]
    assert mailbox.logins == [USER]
    assert PROMPT.encode() not in raw
    assert API_KEY.encode() not in raw
    assert b"dentist appointment on Tuesday at 10am. Ask whether" not in raw
    (message,) = mailbox.messages()
    assert message["To"] == "dana@example.com"
    assert message["From"] == "acme <calls@acme.test>"
    assert message["Subject"] == "Call to Dr Smith (+14155550100): finished"

    record = (await app_client.get(f"/api.ashx/v1/calls/{created['callId']}",
                                   headers=org.headers)).json()  # fmt: skip
    body = message.get_body(preferencelist=("plain",))
    assert body is not None
    text = body.get_content()
    assert "Outcome:    finished" in text
    assert f"Trunk:      {record['trunkId']}" in text
    assert f"Dialled:    {record['dispatchedAtUtc']}" in text
    assert f"Answered:   {record['answeredAtUtc']}" in text
    assert f"Ended:      {record['endedAtUtc']}" in text
    assert f"Duration:   {record['durationSec']} s" in text
    transcript = (await app_client.get(f"/api.ashx/v1/transcripts/{created['callId']}",
                                       headers=org.headers)).json()  # fmt: skip
    for turn in transcript["turns"]:
        assert f"{turn['speaker']}: {turn['text']}" in text

    (attachment,) = list(message.iter_attachments())
    assert attachment.get_filename() == record["transcriptPath"]
    assert attachment.get_content_type() == "application/json"
    document = orjson.loads(attachment.get_content())
    assert document["callId"] == created["callId"]
    assert [t["text"] for t in document["turns"]] == [t["text"] for t in transcript["turns"]]

    async with runtime.db.transaction() as session:
        ((email, tries),) = await emails.delivery_log(
            session, tenant_id=org.id, call_id=created["callId"]
        )
    assert (email.status, email.tries) == ("sent", 1)
    assert [(t.try_number, t.smtp_code, t.error) for t in tries] == [(1, 250, None)]


async def test_a_technical_failure_is_mailed_with_its_error_and_no_transcript(
    app_client: AsyncClient, runtime: Runtime, org: Org, mailbox: Mailbox
) -> None:
    await place(app_client, org.headers, phone="+14155550105")
    await settle(runtime)
    assert await send_due(runtime) == 1
    (message,) = mailbox.messages()
    assert message["Subject"].endswith(": technical failure")
    text = message.get_body(preferencelist=("plain",)).get_content()  # type: ignore[union-attr]
    assert "Outcome:    none (technical failure)" in text
    assert "Error:      every trunk rejected the INVITE" in text
    assert "Answered:   not answered" in text
    assert list(message.iter_attachments()) == []


async def test_every_attempt_gets_its_email(
    app_client: AsyncClient, runtime: Runtime, org: Org, mailbox: Mailbox
) -> None:
    from switchboard.platform.calls import tasks

    await place(app_client, org.headers, phone="+14155550101", retries=1, retryDelayMinutes=1)
    await settle(runtime)
    runtime.clock.advance(61)  # type: ignore[attr-defined]
    await tasks.dispatch_due(runtime)
    await settle(runtime)
    assert await send_due(runtime) == 2
    subjects = [m["Subject"] for m in mailbox.messages()]
    assert subjects == ["Call to +14155550101 (+14155550101): no-answer"] * 2
    texts = [m.get_body(preferencelist=("plain",)).get_content() for m in mailbox.messages()]  # type: ignore[union-attr]
    assert "attempt 1" in texts[0]
    assert "attempt 2" in texts[1]


async def test_refused_tries_are_retried_logged_and_finally_failed(
    app_client: AsyncClient, runtime: Runtime, org: Org, mailbox: Mailbox
) -> None:
    await place(app_client, org.headers)
    await settle(runtime)
    mailbox.answers = ["451 4.3.0 mailbox busy"]
    assert await send_due(runtime) == 1
    assert mailbox.received == []
    (email,) = await _emails(runtime)
    assert (email.status, email.tries, email.last_error) == ("pending", 1, "451 4.3.0 mailbox busy")
    assert await send_due(runtime) == 0  # not before the retry delay
    runtime.clock.advance(60)  # type: ignore[attr-defined]
    assert await send_due(runtime) == 1
    assert len(mailbox.received) == 1
    (email,) = await _emails(runtime)
    assert (email.status, email.tries) == ("sent", 2)

    # a permanent refusal fails the email at once
    await place(app_client, org.headers)
    await settle(runtime)
    mailbox.answers = ["550 5.1.1 no such user"]
    assert await send_due(runtime) == 1
    failed = [e for e in await _emails(runtime) if e.status == "failed"]
    assert [(e.tries, e.last_error) for e in failed] == [(1, "550 5.1.1 no such user")]


async def test_wrong_credentials_never_leak_the_password(
    app_client: AsyncClient, runtime: Runtime, org: Org, mailbox: Mailbox, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    assert runtime.settings.smtp_password_file is not None
    runtime.settings.smtp_password_file.write_text("not-the-password")
    await place(app_client, org.headers)
    await settle(runtime)
    assert await send_due(runtime) == 1
    (email,) = await _emails(runtime)
    assert email.status == "failed"
    assert (email.last_error or "").startswith("535")
    assert "not-the-password" not in caplog.text
    assert PASSWORD not in caplog.text


async def test_the_tenant_switch_and_sender_name(
    app_client: AsyncClient, runtime: Runtime, org: Org, mailbox: Mailbox
) -> None:
    async with runtime.db.transaction() as session:
        tenant = await session.get(Tenant, org.id)
        assert tenant is not None
        tenant.settings = {**tenant.settings, "OutcomeEmail:Enabled": "false"}
    await place(app_client, org.headers)
    await settle(runtime)
    assert await _emails(runtime) == []
    async with runtime.db.transaction() as session:
        tenant = await session.get(Tenant, org.id)
        assert tenant is not None
        tenant.settings = {**tenant.settings, "OutcomeEmail:Enabled": "true",
                           "OutcomeEmail:SenderName": "Acme Reminders"}  # fmt: skip
    await place(app_client, org.headers)
    await settle(runtime)
    assert await send_due(runtime) == 1
    assert mailbox.messages()[0]["From"] == "Acme Reminders <calls@acme.test>"
