from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, UtcDateTime


class TranscriptShare(Base):
    """A public link to one transcript. Only the token's SHA-256 and its last 8 characters are
    kept; revoking deletes the row (and so the token)."""

    __tablename__ = "transcript_shares"
    __table_args__ = (Index("ix_transcript_shares_tenant_call", "tenant_id", "call_id"),)

    id: Mapped[str] = mapped_column(String(24), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    transcript_id: Mapped[int] = mapped_column(ForeignKey("transcripts.id", ondelete="CASCADE"))
    call_id: Mapped[str] = mapped_column(String(64))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    token_tail: Mapped[str] = mapped_column(String(8))
    ttl_hours: Mapped[int]
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    views: Mapped[int] = mapped_column(default=0)
    last_viewed_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
