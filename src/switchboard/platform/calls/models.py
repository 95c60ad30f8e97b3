from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, JsonType, UtcDateTime

# The values of ``Call.status`` (spec 3.1), in the order of a call's life.
SCHEDULED = "scheduled"
DISPATCHING = "dispatching"
IN_FLIGHT = "in-flight"
ENDED_SUCCESS = "ended-success"
RETRY_PENDING = "ended-failed-retry-pending"
ENDED_FINAL = "ended-failed-final"
CANCELLED = "cancelled"
STATUSES = (
    SCHEDULED, DISPATCHING, IN_FLIGHT, ENDED_SUCCESS, RETRY_PENDING, ENDED_FINAL, CANCELLED,
)  # fmt: skip


class Call(Base):
    """One outbound AI call; the columns of the current attempt are reset on each retry."""

    __tablename__ = "calls"
    __table_args__ = (
        Index("ix_calls_tenant_id_id", "tenant_id", "id"),
        Index("ix_calls_status_due_at", "status", "due_at"),
        Index("ix_calls_status_lease_until", "status", "lease_until"),
        Index("ix_calls_attempt_open_deadline_at", "attempt_open", "deadline_at"),
        Index("ix_calls_lease_owner", "lease_owner"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    call_id: Mapped[str] = mapped_column(String(16), unique=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    requested_by: Mapped[str] = mapped_column(String(128))
    phone: Mapped[str] = mapped_column(String(32))
    display_name: Mapped[str] = mapped_column(String(128))
    email: Mapped[str] = mapped_column(String(254))
    voice: Mapped[str] = mapped_column(String(32))
    language: Mapped[str] = mapped_column(String(35))
    model: Mapped[str] = mapped_column(String(128))
    system_prompt_sealed: Mapped[str] = mapped_column(Text)
    api_key_sealed: Mapped[str] = mapped_column(Text)
    max_seconds: Mapped[int] = mapped_column(Integer)
    retry_delay_minutes: Mapped[int] = mapped_column(Integer)
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    retries_left: Mapped[int] = mapped_column(Integer)
    trunk_ids: Mapped[list[str]] = mapped_column(JsonType)
    trunk_id: Mapped[str] = mapped_column(String(128), default="")

    status: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    scheduled_for: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    # when the dispatcher should dial (scheduled calls and retries); NULL otherwise
    due_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    dispatched_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    answered_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    ai_started_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    transferred_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    ended_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    ended_reason: Mapped[str] = mapped_column(String(32), default="")
    outcome: Mapped[str] = mapped_column(String(32), default="")
    duration_sec: Mapped[int] = mapped_column(Integer, default=0)
    transcript_path: Mapped[str] = mapped_column(String(255), default="")
    error_detail: Mapped[str] = mapped_column(String(500), default="")
    # the final SIP status of the attempt's INVITE as the bridge reported it (0 when none)
    sip_status: Mapped[int] = mapped_column(Integer, default=0)
    cancelled_by: Mapped[str] = mapped_column(String(128), default="")

    # the bridge holds a session for the current attempt that has not reported its end yet
    attempt_open: Mapped[bool] = mapped_column(Boolean, default=False)
    # which process dialled (or is dialling) the current attempt, and until when it is trusted
    lease_owner: Mapped[str | None] = mapped_column(String(128), nullable=True)
    lease_until: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    # the watchdog closes an open attempt after this instant
    deadline_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    dial_failures: Mapped[int] = mapped_column(Integer, default=0)
    bridge_reply: Mapped[str] = mapped_column(Text, default="")


class InboundCall(Base):
    """An inbound call reported by the bridge (virtual number or SIP receptionist)."""

    __tablename__ = "inbound_calls"

    id: Mapped[int] = mapped_column(primary_key=True)
    call_id: Mapped[str] = mapped_column(String(32), unique=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(String(16))
    number: Mapped[str] = mapped_column(String(64))
    from_number: Mapped[str] = mapped_column(String(64), default="")
    room: Mapped[str] = mapped_column(String(128), default="")
    started_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    answered_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    ai_started_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    transferred_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    ended_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    outcome: Mapped[str] = mapped_column(String(32), default="")


class CallIdempotencyKey(Base):
    """The first answer to ``POST /v1/calls`` under an ``Idempotency-Key``, kept 24 hours.

    ``body_hash`` is an HMAC (keyed with the platform secret) of the parsed request, so the row
    tells whether a retry sent the same body without holding the AI key or the prompt.
    """

    __tablename__ = "call_idempotency_keys"
    __table_args__ = (
        UniqueConstraint("tenant_id", "key"),
        Index("ix_call_idempotency_keys_expires_at", "expires_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(255))
    body_hash: Mapped[str] = mapped_column(String(64))
    call_id: Mapped[str] = mapped_column(String(16), default="")
    response: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
