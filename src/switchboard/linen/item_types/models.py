from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import IDS_NEVER_REUSED, Base, JsonType, UtcDateTime


class ItemType(Base):
    """One catalogue entry; a ``set`` lists its components as ``[{itemTypeId, qty}]``."""

    __tablename__ = "linen_item_types"
    __table_args__ = (UniqueConstraint("tenant_id", "code"), IDS_NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    code: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(200))
    category: Mapped[str] = mapped_column(String(16))
    size: Mapped[str | None] = mapped_column(String(64), nullable=True)
    unit: Mapped[str] = mapped_column(String(8))
    weight_grams: Mapped[int] = mapped_column(default=0)
    active: Mapped[bool] = mapped_column(default=True)
    components: Mapped[list[dict[str, Any]]] = mapped_column(JsonType, default=list)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
