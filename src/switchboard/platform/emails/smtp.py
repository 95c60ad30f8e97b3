"""SMTP submission with the standard library, run in a thread by the sender."""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass
from pathlib import Path

from switchboard.settings import Settings


class SmtpFailure(Exception):
    """A submission that did not go through; ``permanent`` for SMTP 5xx answers."""

    def __init__(self, description: str, *, code: int | None = None) -> None:
        super().__init__(description)
        self.description = description[:300]
        self.code = code

    @property
    def permanent(self) -> bool:
        return self.code is not None and 500 <= self.code < 600


@dataclass(frozen=True, slots=True)
class SmtpConfig:
    host: str
    port: int
    security: str
    user: str
    password_file: Path | None
    ca_file: Path | None
    sender: str
    timeout: float

    @classmethod
    def from_settings(cls, settings: Settings) -> SmtpConfig:
        return cls(
            host=settings.smtp_host,
            port=settings.smtp_port,
            security=settings.smtp_security,
            user=settings.smtp_user,
            password_file=settings.smtp_password_file,
            ca_file=settings.smtp_ca_file,
            sender=settings.smtp_sender,
            timeout=settings.smtp_timeout,
        )

    def _password(self) -> str:
        if self.password_file is None:
            return ""
        try:
            return self.password_file.read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise SmtpFailure(f"cannot read the SMTP password file: {exc.strerror}") from None

    def _tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)


def _login(client: smtplib.SMTP, user: str, password: str) -> None:
    """AUTH PLAIN when offered (one round trip, and a refusal is final), else smtplib's choice."""
    if "plain" in client.esmtp_features.get("auth", "").lower().split():
        client.user, client.password = user, password
        client.auth("PLAIN", client.auth_plain)
    else:
        client.login(user, password)


def send(config: SmtpConfig, *, recipient: str, message: bytes) -> None:
    """Submit ``message`` to ``recipient``; raises SmtpFailure (never with the password)."""
    try:
        if config.security == "tls":
            client: smtplib.SMTP = smtplib.SMTP_SSL(
                config.host, config.port, timeout=config.timeout, context=config._tls()
            )
        else:
            client = smtplib.SMTP(config.host, config.port, timeout=config.timeout)
        with client:
            client.ehlo()
            if config.security == "starttls":
                client.starttls(context=config._tls())
                client.ehlo()
            if config.user:
                _login(client, config.user, config._password())
            refused = client.sendmail(config.sender, [recipient], message)
            if refused:
                code, text = refused[recipient]
                raise SmtpFailure(f"{code} {text.decode(errors='replace')}", code=code)
    except smtplib.SMTPResponseException as exc:
        raw = exc.smtp_error
        reply = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        raise SmtpFailure(f"{exc.smtp_code} {reply}".strip(), code=exc.smtp_code) from None
    except smtplib.SMTPRecipientsRefused as exc:
        code, text = next(iter(exc.recipients.values()))
        raise SmtpFailure(f"{code} {text.decode(errors='replace')}", code=code) from None
    except (smtplib.SMTPException, OSError) as exc:
        raise SmtpFailure(f"{type(exc).__name__}: {exc}") from None
