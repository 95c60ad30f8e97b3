from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import IDS_NEVER_REUSED, Base, UtcDateTime


class PropertyGroup(Base):
    __tablename__ = "linen_property_groups"
    __table_args__ = (UniqueConstraint("tenant_id", "name"), IDS_NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))
    notes: Mapped[str] = mapped_column(String(5000), default="")
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class GroupMember(Base):
    """A property belongs to any number of groups (a region and an owner, say)."""

    __tablename__ = "linen_group_members"

    group_id: Mapped[int] = mapped_column(
        ForeignKey("linen_property_groups.id", ondelete="CASCADE"), primary_key=True
    )
    property_id: Mapped[int] = mapped_column(
        ForeignKey("linen_properties.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
