from __future__ import annotations

import datetime as dt

from sqlalchemy import String, Text
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, UtcDateTime


class EndedWebSession(Base):
    """A web app session that was signed out (``WebSession.sid``): any copy of its cookie is
    refused until the session would have expired anyway (``expires_at``), then the row is
    purged (decision 0603)."""

    __tablename__ = "web_sessions_ended"

    sid: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class PendingFlash(Base):
    """A result of a form post waiting to be shown once (decision 0602): its values (secrets
    among them) sealed with the server's key, under a digest of the random id that the app's
    sealed flash cookie carries. Reading it deletes it; one never read is purged once it
    expires."""

    __tablename__ = "web_flashes"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    values_sealed: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
