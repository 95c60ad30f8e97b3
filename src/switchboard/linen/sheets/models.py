from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, Date, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import IDS_NEVER_REUSED, Base, UtcDateTime


class LinenSheet(Base):
    __tablename__ = "linen_sheets"
    __table_args__ = (
        UniqueConstraint("tenant_id", "number"),
        Index("ix_linen_sheets_tenant_date", "tenant_id", "service_date"),
        Index("ix_linen_sheets_tenant_laundry_updated", "tenant_id", "laundry_id", "updated_at"),
        IDS_NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    number: Mapped[str] = mapped_column(String(32))
    year: Mapped[int]
    seq: Mapped[int]
    property_id: Mapped[int] = mapped_column(
        ForeignKey("linen_properties.id", ondelete="RESTRICT"), index=True
    )
    laundry_id: Mapped[int] = mapped_column(ForeignKey("linen_laundries.id", ondelete="RESTRICT"))
    service_date: Mapped[dt.date] = mapped_column(Date)
    pickup_date: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    reason: Mapped[str] = mapped_column(String(16))
    booking_ref: Mapped[str] = mapped_column(String(128), default="")
    guest_count: Mapped[int | None] = mapped_column(nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="draft")
    late_order: Mapped[bool] = mapped_column(default=False)
    confirmed_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    confirmed_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    delivered_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    reported_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    cancelled_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    cancelled_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    cancel_reason: Mapped[str] = mapped_column(String(500), default="")
    invoice_id: Mapped[int | None] = mapped_column(
        ForeignKey("linen_invoices.id", ondelete="SET NULL"), nullable=True, index=True
    )
    weight_grams: Mapped[int] = mapped_column(BigInteger, default=0)
    estimated_cost: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    currency: Mapped[str | None] = mapped_column(String(3), nullable=True)
    notes: Mapped[str] = mapped_column(String(5000), default="")
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    created_by: Mapped[str] = mapped_column(String(128), default="")
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class SheetLine(Base):
    """Per item type: ordered, delivered, collected soiled, rejected (stained, torn)."""

    __tablename__ = "linen_sheet_lines"
    __table_args__ = (
        UniqueConstraint("sheet_id", "item_type_id"),
        # Covers the statistics' items-by-type query: no table lookups per line.
        Index(
            "ix_linen_sheet_lines_counts",
            "sheet_id",
            "item_type_id",
            "qty_ordered",
            "qty_delivered",
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    sheet_id: Mapped[int] = mapped_column(ForeignKey("linen_sheets.id", ondelete="CASCADE"))
    item_type_id: Mapped[int] = mapped_column(
        ForeignKey("linen_item_types.id", ondelete="RESTRICT"), index=True
    )
    qty_ordered: Mapped[int] = mapped_column(default=0)
    qty_delivered: Mapped[int] = mapped_column(default=0)
    qty_collected: Mapped[int] = mapped_column(default=0)
    qty_rejected: Mapped[int] = mapped_column(default=0)
    note: Mapped[str] = mapped_column(String(500), default="")
