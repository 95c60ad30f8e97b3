from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import IDS_NEVER_REUSED, Base, JsonType, UtcDateTime


class Property(Base):
    __tablename__ = "linen_properties"
    __table_args__ = (UniqueConstraint("tenant_id", "code"), IDS_NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    code: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(200))
    external_ref: Mapped[str] = mapped_column(String(128), default="")
    active: Mapped[bool] = mapped_column(default=True)
    address: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    bedrooms: Mapped[int] = mapped_column(default=0)
    bathrooms: Mapped[int] = mapped_column(default=0)
    max_guests: Mapped[int] = mapped_column(default=0)
    beds: Mapped[list[dict[str, Any]]] = mapped_column(JsonType, default=list)
    default_laundry_id: Mapped[int | None] = mapped_column(
        ForeignKey("linen_laundries.id", ondelete="SET NULL"), nullable=True
    )
    linen_par: Mapped[list[dict[str, Any]]] = mapped_column(JsonType, default=list)
    delivery_note: Mapped[str] = mapped_column(String(2000), default="")
    notes: Mapped[str] = mapped_column(String(5000), default="")
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
