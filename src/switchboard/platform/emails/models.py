"""The outcome email outbox and its delivery log."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, UtcDateTime

PENDING = "pending"
SENT = "sent"
FAILED = "failed"


class OutcomeEmail(Base):
    """One composed message, written in the transaction that ended the call attempt.

    ``message`` holds the complete RFC 5322 bytes, so every attempt sends the same message
    (and its ``Message-ID``), whatever changes in the settings meanwhile.
    """

    __tablename__ = "outcome_emails"
    __table_args__ = (
        Index("ix_outcome_emails_due", "status", "next_attempt_at"),
        Index("ix_outcome_emails_tenant_call", "tenant_id", "call_id"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    call_id: Mapped[str] = mapped_column(String(32))
    attempt: Mapped[int] = mapped_column(Integer)
    recipient: Mapped[str] = mapped_column(String(254))
    message: Mapped[bytes] = mapped_column(LargeBinary)
    status: Mapped[str] = mapped_column(String(16), default=PENDING)
    tries: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    next_attempt_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    lease_token: Mapped[str | None] = mapped_column(String(32), default=None)
    lease_until: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, default=None)
    completed_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, default=None)
    last_error: Mapped[str | None] = mapped_column(String(300), default=None)


class OutcomeEmailAttempt(Base):
    """One SMTP submission of an outcome email: the log operators read."""

    __tablename__ = "outcome_email_attempts"

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    email_id: Mapped[str] = mapped_column(
        ForeignKey("outcome_emails.id", ondelete="CASCADE"), index=True
    )
    try_number: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    smtp_code: Mapped[int | None] = mapped_column(Integer, default=None)
    error: Mapped[str | None] = mapped_column(String(300), default=None)
