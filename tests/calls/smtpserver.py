"""A real SMTP server (aiosmtpd) on a free loopback port, recording what it accepts."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

from tests.certs import write_self_signed

USER = "mailer"
PASSWORD = "smtp-password-7f3a"


@dataclass
class Mailbox:
    port: int = 0
    received: list[tuple[str, list[str], bytes]] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)  # consumed first: e.g. "451 try later"
    logins: list[str] = field(default_factory=list)
    tls_used: list[bool] = field(default_factory=list)

    def messages(self) -> list[EmailMessage]:
        parsed = []
        for _, _, raw in self.received:
            message = message_from_bytes(raw, policy=policy.default)
            assert isinstance(message, EmailMessage)
            parsed.append(message)
        return parsed

    async def handle_DATA(self, server: SMTP, session: Any, envelope: Any) -> str:
        if self.answers:
            return self.answers.pop(0)
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        self.tls_used.append(session.ssl is not None)
        return "250 OK"

    def authenticate(
        self, server: SMTP, session: Any, envelope: Any, mechanism: str, auth_data: Any
    ) -> AuthResult:
        assert isinstance(auth_data, LoginPassword)
        self.logins.append(auth_data.login.decode())
        ok = auth_data.login.decode() == USER and auth_data.password.decode() == PASSWORD
        return AuthResult(success=ok, handled=False)


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key; the certificate is its own CA file."""
    return write_self_signed(directory / "smtp-cert.pem", directory / "smtp-key.pem")


@pytest.fixture
async def mailbox(tmp_path: Path) -> AsyncIterator[Mailbox]:
    """STARTTLS offered (required before AUTH), AUTH PLAIN/LOGIN with USER and PASSWORD."""
    box = Mailbox()
    cert, key = self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(
            box, hostname="mail.test", tls_context=context, authenticator=box.authenticate,
            auth_require_tls=True,
        ),
        "127.0.0.1",
        0,
    )  # fmt: skip
    box.port = server.sockets[0].getsockname()[1]
    yield box
    server.close()
    await server.wait_closed()
