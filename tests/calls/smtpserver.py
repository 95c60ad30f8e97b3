"""A real SMTP server (aiosmtpd) on a free loopback port, recording what it accepts."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

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
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "smtp-cert.pem", directory / "smtp-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


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
