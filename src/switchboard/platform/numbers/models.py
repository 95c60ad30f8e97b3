from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, UtcDateTime

MODE_LIVE_VOICE_AI = "live-voice-ai"
MODES = (MODE_LIVE_VOICE_AI,)
PUBLIC, SIGNED_IN = "public", "signed-in"
VISIBILITIES = (PUBLIC, SIGNED_IN)
DEFAULT_MAX_DURATION_SEC = 3500


class VirtualNumber(Base):
    """An inbound number or extension of a tenant; its AI key and system prompt are sealed."""

    __tablename__ = "virtual_numbers"
    __table_args__ = (UniqueConstraint("tenant_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128))
    number: Mapped[str] = mapped_column(String(32))
    mode: Mapped[str] = mapped_column(String(32), default=MODE_LIVE_VOICE_AI)
    voice: Mapped[str] = mapped_column(String(32))
    language: Mapped[str] = mapped_column(String(35))
    save_transcripts: Mapped[bool] = mapped_column(Boolean, default=True)
    max_duration_sec: Mapped[int] = mapped_column(Integer, default=DEFAULT_MAX_DURATION_SEC)
    visibility: Mapped[str] = mapped_column(String(16), default="public")
    # SecretBox tokens; opened only by ``service.reveal_secrets`` for the media bridge.
    api_key_sealed: Mapped[str] = mapped_column(String(4096))
    system_prompt_sealed: Mapped[str] = mapped_column(String)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)

    def __repr__(self) -> str:
        # Never include the sealed columns: a repr can end up in a log line.
        return (
            f"VirtualNumber(id={self.id!r}, tenant_id={self.tenant_id!r}, number={self.number!r})"
        )
