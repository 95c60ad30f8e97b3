from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, Date, ForeignKey, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import IDS_NEVER_REUSED, Base, UtcDateTime


class Invoice(Base):
    __tablename__ = "linen_invoices"
    __table_args__ = (UniqueConstraint("laundry_id", "invoice_number"), IDS_NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    laundry_id: Mapped[int] = mapped_column(ForeignKey("linen_laundries.id", ondelete="RESTRICT"))
    invoice_number: Mapped[str] = mapped_column(String(64))
    invoice_date: Mapped[dt.date] = mapped_column(Date)
    period_from: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    period_to: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    currency: Mapped[str] = mapped_column(String(3))
    net: Mapped[int] = mapped_column(BigInteger)
    tax: Mapped[int] = mapped_column(BigInteger)
    gross: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16), default="received")
    source: Mapped[str] = mapped_column(String(16))
    pdf_filename: Mapped[str] = mapped_column(String(255))
    pdf_size: Mapped[int] = mapped_column(BigInteger)
    pdf_sha256: Mapped[str] = mapped_column(String(64))
    received_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    approved_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    approved_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    disputed_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    dispute_reason: Mapped[str] = mapped_column(String(2000), default="")
    paid_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    payment_ref: Mapped[str] = mapped_column(String(128), default="")
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class InvoiceLine(Base):
    __tablename__ = "linen_invoice_lines"

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    invoice_id: Mapped[int] = mapped_column(
        ForeignKey("linen_invoices.id", ondelete="CASCADE"), index=True
    )
    linen_sheet_id: Mapped[int | None] = mapped_column(
        ForeignKey("linen_sheets.id", ondelete="RESTRICT"), nullable=True, index=True
    )
    property_id: Mapped[int | None] = mapped_column(
        ForeignKey("linen_properties.id", ondelete="RESTRICT"), nullable=True
    )
    description: Mapped[str] = mapped_column(String(500), default="")
    qty: Mapped[int]
    unit_price: Mapped[int] = mapped_column(BigInteger)
    net: Mapped[int] = mapped_column(BigInteger)


class InvoicePdf(Base):
    """The uploaded file, apart from the invoice row so lists never load it."""

    __tablename__ = "linen_invoice_pdfs"

    invoice_id: Mapped[int] = mapped_column(
        ForeignKey("linen_invoices.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    content: Mapped[bytes] = mapped_column(LargeBinary)
