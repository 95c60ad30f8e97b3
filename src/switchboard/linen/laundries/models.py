from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import BigInteger, Date, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import IDS_NEVER_REUSED, Base, JsonType, UtcDateTime


class Laundry(Base):
    __tablename__ = "linen_laundries"
    __table_args__ = IDS_NEVER_REUSED

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    contact_name: Mapped[str] = mapped_column(String(200), default="")
    email: Mapped[str] = mapped_column(String(320), default="")
    phone: Mapped[str] = mapped_column(String(64), default="")
    address: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    vat_id: Mapped[str] = mapped_column(String(64), default="")
    active: Mapped[bool] = mapped_column(default=True)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class LaundryKey(Base):
    """An ``lk_`` key of the Laundry API: only its SHA-256 hash is kept."""

    __tablename__ = "linen_laundry_keys"
    __table_args__ = IDS_NEVER_REUSED

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    laundry_id: Mapped[int] = mapped_column(
        ForeignKey("linen_laundries.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(128), default="")
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    created_by: Mapped[str] = mapped_column(String(128), default="")
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)


class PriceList(Base):
    """Prices of one laundry for a validity period, in one currency (minor units)."""

    __tablename__ = "linen_price_lists"
    __table_args__ = IDS_NEVER_REUSED

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    laundry_id: Mapped[int] = mapped_column(
        ForeignKey("linen_laundries.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200), default="")
    currency: Mapped[str] = mapped_column(String(3))
    valid_from: Mapped[dt.date] = mapped_column(Date)
    valid_to: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    per_kg: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    delivery_fee: Mapped[int] = mapped_column(BigInteger, default=0)
    late_order_surcharge: Mapped[int] = mapped_column(BigInteger, default=0)
    items: Mapped[list[dict[str, Any]]] = mapped_column(JsonType, default=list)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
