from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, JsonType, UtcDateTime


class Event(Base):
    """One emitted event: the transactional outbox row that webhook deliveries fan out from."""

    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_tenant_created", "tenant_id", "id"),
        Index("ix_events_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JsonType)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
