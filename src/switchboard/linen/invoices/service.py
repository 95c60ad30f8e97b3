"""Invoice rules: a real PDF, consistent amounts, unique numbers per laundry, and the states
``received -> approved -> paid``, or ``disputed`` (from received or approved; approving a
disputed invoice settles the dispute)."""

from __future__ import annotations

import hashlib
import re

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.kit.errors import ApiError, BadRequest, Conflict, NotFound, PayloadTooLarge
from switchboard.kit.paging import PageParams
from switchboard.linen import common
from switchboard.linen.common import check_range
from switchboard.linen.invoices import repository
from switchboard.linen.invoices.models import Invoice, InvoiceLine, InvoicePdf
from switchboard.linen.invoices.repository import InvoiceFilter
from switchboard.linen.invoices.schemas import InvoiceMeta
from switchboard.linen.laundries import service as laundries
from switchboard.linen.properties import service as properties
from switchboard.linen.sheets import service as sheets

MAX_PDF_BYTES = 10 * 1024 * 1024
STATUSES = ("received", "approved", "paid", "disputed")
# Where an invoice came from: the laundry's own upload, or an admin recording one received by mail.
LAUNDRY_API, ADMIN = "laundry-api", "admin"
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "approve": (frozenset({"received", "disputed"}), "approved"),
    "dispute": (frozenset({"received", "approved"}), "disputed"),
    "pay": (frozenset({"approved"}), "paid"),
}
_STARTXREF = re.compile(rb"startxref\s+(\d+)\s+%%EOF\s*$")
_XREF_STREAM = re.compile(rb"\d+\s+\d+\s+obj\b")
_FILENAME_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]")


class UnsupportedMediaType(ApiError):
    """The upload is not of an accepted type (415)."""

    status = 415
    code = "unsupported_media_type"


def next_status(current: str, action: str) -> str:
    sources, target = TRANSITIONS[action]
    if current not in sources:
        raise Conflict(f"cannot {action} an invoice in status {current}", code="invalid_transition")
    return target


def check_pdf(data: bytes) -> None:
    """A PDF starts with ``%PDF-`` and ends with a trailer whose ``startxref`` offset points
    at a cross-reference table or stream inside the file."""
    if len(data) > MAX_PDF_BYTES:
        raise PayloadTooLarge(f"the PDF is larger than {MAX_PDF_BYTES} bytes")
    if not data.startswith(b"%PDF-"):
        raise UnsupportedMediaType("the file is not a PDF (no %PDF- header)", code="not_a_pdf")
    match = _STARTXREF.search(data[-2048:])
    if match is None:
        raise UnsupportedMediaType("the PDF has no readable trailer", code="not_a_pdf")
    offset = int(match.group(1))
    target = data[offset : offset + 64] if offset < len(data) else b""
    if not (target.startswith(b"xref") or _XREF_STREAM.match(target)):
        raise UnsupportedMediaType("the PDF's cross-reference offset is broken", code="not_a_pdf")


def safe_filename(name: str | None) -> str:
    base = (name or "invoice.pdf").replace("\\", "/").rsplit("/", 1)[-1]
    base = _FILENAME_UNSAFE.sub("_", base).strip() or "invoice.pdf"
    return base[:200]


def _check_amounts(meta: InvoiceMeta) -> None:
    check_range(meta.period_from, meta.period_to, ("periodFrom", "periodTo"))
    if meta.gross != meta.net + meta.tax:
        raise BadRequest("gross: must equal net + tax", code="amounts_mismatch")
    for index, line in enumerate(meta.lines):
        if line.net != line.qty * line.unit_price:
            raise BadRequest(
                f"lines[{index}].net: must equal qty x unitPrice", code="amounts_mismatch"
            )
    # No lines add up to 0: an invoice without lines has a net of 0 (docs/linen.md).
    if sum(line.net for line in meta.lines) != meta.net:
        raise BadRequest(
            "net: must equal the sum of the lines' net (an invoice without lines has a net of 0)",
            code="amounts_mismatch",
        )


async def receive(
    session: AsyncSession,
    *,
    tenant_id: int,
    laundry_id: int,
    meta: InvoiceMeta,
    pdf: bytes,
    filename: str | None,
    source: str,
    clock: Clock,
) -> Invoice:
    """Store an uploaded invoice and move the sheets it names to ``invoiced``."""
    check_pdf(pdf)
    _check_amounts(meta)
    if await repository.by_number(session, tenant_id, laundry_id, meta.invoice_number):
        raise Conflict(
            f"invoice number {meta.invoice_number!r} was already uploaded",
            code="duplicate_invoice",
        )
    now = clock.now()
    invoice = Invoice(
        tenant_id=tenant_id,
        laundry_id=laundry_id,
        invoice_number=meta.invoice_number,
        invoice_date=meta.invoice_date,
        period_from=meta.period_from,
        period_to=meta.period_to,
        currency=meta.currency,
        net=meta.net,
        tax=meta.tax,
        gross=meta.gross,
        status="received",
        source=source,
        pdf_filename=safe_filename(filename),
        pdf_size=len(pdf),
        pdf_sha256=hashlib.sha256(pdf).hexdigest(),
        received_at=now,
        updated_at=now,
    )
    session.add(invoice)
    await session.flush()
    session.add(InvoicePdf(invoice_id=invoice.id, tenant_id=tenant_id, content=pdf))
    sheet_ids = [line.linen_sheet_id for line in meta.lines if line.linen_sheet_id is not None]
    linked = await sheets.mark_invoiced(
        session, tenant_id=tenant_id, laundry_id=laundry_id, sheet_ids=sheet_ids,
        invoice_id=invoice.id, clock=clock,
    )  # fmt: skip
    for index, line in enumerate(meta.lines):
        property_id = line.property_id
        if line.linen_sheet_id is not None:
            sheet_property = linked[line.linen_sheet_id].property_id
            if property_id is not None and property_id != sheet_property:
                raise BadRequest(f"lines[{index}].propertyId: does not match the sheet's property")
            property_id = sheet_property
        elif property_id is not None:
            field = f"lines[{index}].propertyId"
            served = await properties.require_reference(
                session, tenant_id=tenant_id, property_id=property_id, field=field
            )
            # A laundry invoices only what it serves, and learns no other property's id: one
            # it does not serve is as unknown as one that does not exist (decision 0521).
            if source == LAUNDRY_API and not await sheets.laundry_serves(
                session, tenant_id=tenant_id, laundry_id=laundry_id, property=served
            ):
                raise properties.unknown_property(property_id, field=field)
        session.add(
            InvoiceLine(
                tenant_id=tenant_id,
                invoice_id=invoice.id,
                linen_sheet_id=line.linen_sheet_id,
                property_id=property_id,
                description=line.description,
                qty=line.qty,
                unit_price=line.unit_price,
                net=line.net,
            )
        )
    await session.flush()
    return invoice


async def get(
    session: AsyncSession, *, tenant_id: int, invoice_id: int, laundry_id: int | None = None
) -> Invoice:
    """An invoice; with ``laundry_id`` only that laundry's (the Laundry API's view)."""
    row = await repository.get(session, tenant_id, invoice_id)
    if row is None or (laundry_id is not None and row.laundry_id != laundry_id):
        raise NotFound(f"no invoice {invoice_id}")
    return row


async def lines_of(
    session: AsyncSession, *, tenant_id: int, invoice_ids: list[int]
) -> dict[int, list[InvoiceLine]]:
    return await repository.lines_of(session, tenant_id, invoice_ids)


async def pdf_of(
    session: AsyncSession, *, tenant_id: int, invoice_id: int, laundry_id: int | None = None
) -> tuple[Invoice, bytes]:
    invoice = await get(session, tenant_id=tenant_id, invoice_id=invoice_id, laundry_id=laundry_id)
    content = await repository.pdf_of(session, tenant_id, invoice.id)
    if content is None:
        raise NotFound(f"invoice {invoice_id} has no PDF")
    return invoice, content


def parse_statuses(value: str | None) -> tuple[str, ...]:
    return common.parse_statuses(value, STATUSES)


async def list_invoices(
    session: AsyncSession,
    *,
    tenant_id: int,
    where: InvoiceFilter,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[Invoice], int]:
    check_range(where.date_from, where.date_to)
    return await repository.list_page(session, tenant_id, where, paging=paging, sort=sort)


async def approve(
    session: AsyncSession, *, tenant_id: int, invoice_id: int, actor: str, clock: Clock
) -> Invoice:
    invoice = await get(session, tenant_id=tenant_id, invoice_id=invoice_id)
    invoice.status = next_status(invoice.status, "approve")
    invoice.approved_at = invoice.updated_at = clock.now()
    invoice.approved_by = actor
    await session.flush()
    return invoice


async def dispute(
    session: AsyncSession, *, tenant_id: int, invoice_id: int, reason: str, clock: Clock
) -> Invoice:
    invoice = await get(session, tenant_id=tenant_id, invoice_id=invoice_id)
    invoice.status = next_status(invoice.status, "dispute")
    invoice.disputed_at = invoice.updated_at = clock.now()
    invoice.dispute_reason = reason
    await session.flush()
    return invoice


async def mark_paid(
    session: AsyncSession, *, tenant_id: int, invoice_id: int, payment_ref: str, clock: Clock
) -> Invoice:
    invoice = await get(session, tenant_id=tenant_id, invoice_id=invoice_id)
    invoice.status = next_status(invoice.status, "pay")
    invoice.paid_at = invoice.updated_at = clock.now()
    invoice.payment_ref = payment_ref
    await session.flush()
    return invoice


async def _invoices_of_property(session: AsyncSession, *, tenant_id: int, row_id: int) -> list[str]:
    numbers = await repository.numbers_naming(session, tenant_id, property_id=row_id, limit=4)
    return [f"invoice {number}" for number in numbers]


async def _invoices_of_laundry(session: AsyncSession, *, tenant_id: int, row_id: int) -> list[str]:
    numbers = await repository.numbers_naming(session, tenant_id, laundry_id=row_id, limit=4)
    return [f"invoice {number}" for number in numbers]


# A property named by an invoice's line, and the laundry an invoice is from, are kept from
# deletion (the foreign keys would refuse them too; the refusal names the invoices).
properties.USED_BY.register("invoices", _invoices_of_property)
laundries.USED_BY.register("invoices", _invoices_of_laundry)
