from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, JsonType, UtcDateTime


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    signaling_secret: Mapped[str] = mapped_column(String(512))
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class TenantDomain(Base):
    __tablename__ = "tenant_domains"

    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
