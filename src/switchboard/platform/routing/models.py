"""The routing tables, and the per-tenant revision that invalidates compiled indexes."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, JsonType


class InboundRoute(Base):
    """One row (Did, FromNumber, User); rows are evaluated by ``position``, catchall last.

    (Did, FromNumber) is the key, enforced by the service under the table's revision lock and
    not by a unique index, because tables carried over from older systems hold duplicates that
    must stay addressable (the first in order wins).
    """

    __tablename__ = "inbound_routes"
    __table_args__ = (Index("ix_inbound_routes_tenant_position", "tenant_id", "position"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    position: Mapped[int]
    did: Mapped[str] = mapped_column(String(128))
    from_number: Mapped[str] = mapped_column(String(128), default="")
    user: Mapped[str] = mapped_column(String(128))


class OutboundRoute(Base):
    """One row (match, trunkIds); rows are evaluated by ``position``."""

    __tablename__ = "outbound_routes"
    __table_args__ = (
        UniqueConstraint("tenant_id", "match"),
        Index("ix_outbound_routes_tenant_position", "tenant_id", "position"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    position: Mapped[int]
    match: Mapped[str] = mapped_column(String(128))
    trunk_ids: Mapped[list[Any]] = mapped_column(JsonType)


class RoutingRevision(Base):
    """A random token per table and tenant, replaced on every change.

    Every process compares it with the token its compiled index was built from, so a change
    made anywhere is seen everywhere on the next resolution. Writers update it first, which
    also serialises concurrent writers of one tenant's table (the row lock on PostgreSQL).
    """

    __tablename__ = "routing_revisions"

    tenant_id: Mapped[int] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    inbound: Mapped[str] = mapped_column(String(32), default="")
    outbound: Mapped[str] = mapped_column(String(32), default="")
