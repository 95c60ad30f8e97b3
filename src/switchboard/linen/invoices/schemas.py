from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from switchboard.kit.schemas import Schema, StrictInput
from switchboard.linen.common import ID_MAX, Currency, EnteredDay, MinorUnits

InvoiceStatus = Literal["received", "approved", "paid", "disputed"]


class InvoiceLineIn(StrictInput):
    linen_sheet_id: int | None = Field(
        default=None,
        ge=1,
        le=ID_MAX,
        description="A delivered job of this laundry; it becomes invoiced",
    )
    property_id: int | None = Field(
        default=None, ge=1, le=ID_MAX, description="Defaults to the sheet's"
    )
    description: str = Field(default="", max_length=500)
    qty: int = Field(ge=0, le=1_000_000)
    unit_price: MinorUnits
    net: MinorUnits = Field(description="qty x unitPrice")


class InvoiceMeta(StrictInput):
    """The JSON part of an invoice upload (form field ``metadata``)."""

    invoice_number: str = Field(min_length=1, max_length=64, description="Unique per laundry")
    invoice_date: EnteredDay
    period_from: EnteredDay | None = None
    period_to: EnteredDay | None = None
    currency: Currency
    net: MinorUnits
    tax: MinorUnits
    gross: MinorUnits = Field(description="net + tax")
    lines: list[InvoiceLineIn] = Field(default_factory=list, max_length=2000)


class DisputeIn(StrictInput):
    reason: str = Field(min_length=1, max_length=2000)


class PayIn(StrictInput):
    payment_ref: str = Field(default="", max_length=128)


class InvoiceLineOut(Schema):
    linen_sheet_id: int | None
    property_id: int | None
    description: str
    qty: int
    unit_price: int
    net: int


class PdfOut(Schema):
    filename: str
    size: int
    sha256: str


class InvoiceOut(Schema):
    id: int
    laundry_id: int
    invoice_number: str
    invoice_date: dt.date
    period_from: dt.date | None
    period_to: dt.date | None
    currency: str
    net: int
    tax: int
    gross: int
    status: InvoiceStatus
    source: Literal["laundry-api", "admin"]
    lines: list[InvoiceLineOut]
    pdf: PdfOut
    received_at: str
    approved_at: str | None
    approved_by: str | None
    disputed_at: str | None
    dispute_reason: str
    paid_at: str | None
    payment_ref: str
    updated_at: str


def invoice_out(invoice: object, lines: list[object]) -> InvoiceOut:
    """The wire form of an invoice and its lines (plain conversion, no queries)."""
    from switchboard.kit.clock import iso_utc
    from switchboard.linen.invoices.models import Invoice, InvoiceLine

    assert isinstance(invoice, Invoice)
    out_lines = []
    for line in lines:
        assert isinstance(line, InvoiceLine)
        out_lines.append(
            InvoiceLineOut(
                linen_sheet_id=line.linen_sheet_id,
                property_id=line.property_id,
                description=line.description,
                qty=line.qty,
                unit_price=line.unit_price,
                net=line.net,
            )
        )
    return InvoiceOut(
        id=invoice.id,
        laundry_id=invoice.laundry_id,
        invoice_number=invoice.invoice_number,
        invoice_date=invoice.invoice_date,
        period_from=invoice.period_from,
        period_to=invoice.period_to,
        currency=invoice.currency,
        net=invoice.net,
        tax=invoice.tax,
        gross=invoice.gross,
        status=invoice.status,
        source=invoice.source,
        lines=out_lines,
        pdf=PdfOut(filename=invoice.pdf_filename, size=invoice.pdf_size, sha256=invoice.pdf_sha256),
        received_at=iso_utc(invoice.received_at) or "",
        approved_at=iso_utc(invoice.approved_at),
        approved_by=invoice.approved_by,
        disputed_at=iso_utc(invoice.disputed_at),
        dispute_reason=invoice.dispute_reason,
        paid_at=iso_utc(invoice.paid_at),
        payment_ref=invoice.payment_ref,
        updated_at=iso_utc(invoice.updated_at) or "",
    )
