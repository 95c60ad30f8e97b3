"""All SQL for invoices, their lines and PDFs; tenant-scoped base statements."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import PageParams
from switchboard.linen.common import fetch_page, order_by
from switchboard.linen.groups.models import GroupMember
from switchboard.linen.invoices.models import Invoice, InvoiceLine, InvoicePdf

SORTS: dict[str, Any] = {
    "id": Invoice.id,
    "invoiceDate": Invoice.invoice_date,
    "invoiceNumber": Invoice.invoice_number,
    "gross": Invoice.gross,
    "status": Invoice.status,
    "receivedAt": Invoice.received_at,
}


@dataclass(frozen=True, slots=True)
class InvoiceFilter:
    laundry_id: int | None = None
    property_id: int | None = None
    group_id: int | None = None
    statuses: tuple[str, ...] = ()
    date_from: dt.date | None = None
    date_to: dt.date | None = None


def scoped(tenant_id: int) -> Select[Invoice]:
    return select(Invoice).where(Invoice.tenant_id == tenant_id)


def lines(tenant_id: int) -> Select[InvoiceLine]:
    return select(InvoiceLine).where(InvoiceLine.tenant_id == tenant_id)


async def get(session: AsyncSession, tenant_id: int, invoice_id: int) -> Invoice | None:
    stmt = scoped(tenant_id).where(Invoice.id == invoice_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def numbers_naming(
    session: AsyncSession, tenant_id: int, *, laundry_id: int | None = None,
    property_id: int | None = None, limit: int,
) -> list[str]:  # fmt: skip
    """Numbers of (at most ``limit``) invoices of the laundry, or with a line of the property."""
    stmt = scoped(tenant_id)
    if laundry_id is not None:
        stmt = stmt.where(Invoice.laundry_id == laundry_id)
    if property_id is not None:
        stmt = stmt.join(InvoiceLine, InvoiceLine.invoice_id == Invoice.id)
        stmt = stmt.where(InvoiceLine.property_id == property_id)
    numbers = stmt.with_only_columns(Invoice.invoice_number).distinct()
    return list(await session.scalars(numbers.order_by(Invoice.invoice_number).limit(limit)))


async def by_number(
    session: AsyncSession, tenant_id: int, laundry_id: int, number: str
) -> Invoice | None:
    stmt = scoped(tenant_id).where(
        Invoice.laundry_id == laundry_id, Invoice.invoice_number == number
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def lines_of(
    session: AsyncSession, tenant_id: int, invoice_ids: Iterable[int]
) -> dict[int, list[InvoiceLine]]:
    wanted = set(invoice_ids)
    result: dict[int, list[InvoiceLine]] = defaultdict(list)
    if wanted:
        stmt = lines(tenant_id).where(InvoiceLine.invoice_id.in_(wanted)).order_by(InvoiceLine.id)
        for row in await session.scalars(stmt):
            result[row.invoice_id].append(row)
    return result


async def pdf_of(session: AsyncSession, tenant_id: int, invoice_id: int) -> bytes | None:
    stmt = select(InvoicePdf.content).where(
        InvoicePdf.tenant_id == tenant_id, InvoicePdf.invoice_id == invoice_id
    )
    return await session.scalar(stmt)


async def list_page(
    session: AsyncSession,
    tenant_id: int,
    where: InvoiceFilter,
    *,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[Invoice], int]:
    stmt = scoped(tenant_id)
    if where.laundry_id is not None:
        stmt = stmt.where(Invoice.laundry_id == where.laundry_id)
    if where.property_id is not None:
        with_property = lines(tenant_id).where(InvoiceLine.property_id == where.property_id)
        stmt = stmt.where(Invoice.id.in_(with_property.with_only_columns(InvoiceLine.invoice_id)))
    if where.group_id is not None:
        members = select(GroupMember.property_id).where(
            GroupMember.tenant_id == tenant_id, GroupMember.group_id == where.group_id
        )
        in_group = lines(tenant_id).where(InvoiceLine.property_id.in_(members))
        stmt = stmt.where(Invoice.id.in_(in_group.with_only_columns(InvoiceLine.invoice_id)))
    if where.statuses:
        stmt = stmt.where(Invoice.status.in_(where.statuses))
    if where.date_from is not None:
        stmt = stmt.where(Invoice.invoice_date >= where.date_from)
    if where.date_to is not None:
        stmt = stmt.where(Invoice.invoice_date <= where.date_to)
    order = order_by(sort, SORTS, default="-invoiceDate", tiebreak=Invoice.id)
    return await fetch_page(session, stmt, paging=paging, order=order)
