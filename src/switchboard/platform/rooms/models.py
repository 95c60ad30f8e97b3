"""A room's durable facts: its media mode, whether it has a lobby, and its last known counts.

The peers themselves live in the memory of the ``serve`` process their socket reached; the
counts here are what ``switchboard room list`` shows.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.db import Base, UtcDateTime


class Room(Base):
    __tablename__ = "rooms"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    mode: Mapped[str] = mapped_column(String(8), default="mesh")
    lobby: Mapped[bool] = mapped_column(default=False)
    peer_count: Mapped[int] = mapped_column(default=0)
    human_count: Mapped[int] = mapped_column(default=0)
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
