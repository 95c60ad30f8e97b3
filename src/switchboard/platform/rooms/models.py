"""A room's durable facts: its media mode, whether it has a lobby, and its last known counts.

The peers themselves live in the memory of the ``serve`` process their socket reached; the
counts here are what ``switchboard room list`` shows.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, UtcDateTime


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


class RoomPeer(Base):
    """A peer in a room, whichever ``serve`` process holds its socket (``node``): written only
    when rooms fan out across processes (decision 0841), in the transaction of its event."""

    __tablename__ = "room_peers"
    __table_args__ = (UniqueConstraint("room_id", "peer_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    room_id: Mapped[int] = mapped_column(ForeignKey("rooms.id", ondelete="CASCADE"), index=True)
    peer_id: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(100))
    role: Mapped[str] = mapped_column(String(16))
    verified: Mapped[bool] = mapped_column(default=False)
    pref: Mapped[str] = mapped_column(String(16), default="auto")
    node: Mapped[str] = mapped_column(String(16), index=True)
    joined_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
