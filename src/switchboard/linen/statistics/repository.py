"""The grouped queries behind the statistics; the database aggregates, Python only labels.

Statistics read the sheets, lines and invoice lines of other features: it is a read model
over their tables and never writes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, case, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.linen.groups.models import GroupMember
from switchboard.linen.invoices.models import Invoice, InvoiceLine
from switchboard.linen.sheets.models import LinenSheet, SheetLine

COUNTED = ("confirmed", "delivered", "invoiced")


@dataclass(frozen=True, slots=True)
class StatsQuery:
    tenant_id: int
    group_by: str
    date_from: dt.date
    date_to: dt.date
    property_id: int | None = None
    laundry_id: int | None = None
    group_id: int | None = None


def _key(query: StatsQuery, dialect: str) -> Any:
    if query.group_by == "month":
        if dialect == "sqlite":
            return func.strftime("%Y-%m", LinenSheet.service_date)
        return func.to_char(LinenSheet.service_date, "YYYY-MM")
    if query.group_by == "property":
        return LinenSheet.property_id
    if query.group_by == "laundry":
        return LinenSheet.laundry_id
    return GroupMember.group_id


def _scope(stmt: Select[Any], query: StatsQuery) -> Select[Any]:
    """Tenant, counted states, date range and filters; joins membership when grouping by it."""
    stmt = stmt.where(
        LinenSheet.tenant_id == query.tenant_id,
        LinenSheet.status.in_(COUNTED),
        LinenSheet.service_date >= query.date_from,
        LinenSheet.service_date <= query.date_to,
    )
    if query.property_id is not None:
        stmt = stmt.where(LinenSheet.property_id == query.property_id)
    if query.laundry_id is not None:
        stmt = stmt.where(LinenSheet.laundry_id == query.laundry_id)
    if query.group_by == "group" or query.group_id is not None:
        stmt = stmt.join(
            GroupMember,
            (GroupMember.property_id == LinenSheet.property_id)
            & (GroupMember.tenant_id == query.tenant_id),
        )
        if query.group_id is not None:
            stmt = stmt.where(GroupMember.group_id == query.group_id)
    return stmt


async def totals(
    session: AsyncSession, query: StatsQuery, dialect: str
) -> list[tuple[Any, str | None, int, int, int | None]]:
    """(key, currency, sheets, grams, estimated cost) per key and price-list currency; one
    scan of the sheets serves the counts and the costs."""
    key = _key(query, dialect)
    stmt = select(
        key,
        LinenSheet.currency,
        func.count(LinenSheet.id),
        func.coalesce(func.sum(LinenSheet.weight_grams), 0),
        func.sum(LinenSheet.estimated_cost),
    ).select_from(LinenSheet)
    stmt = _scope(stmt, query).group_by(key, LinenSheet.currency)
    return [
        (k, c, int(n), int(g), None if e is None else int(e))
        for k, c, n, g, e in (await session.execute(stmt)).all()
    ]


async def items(
    session: AsyncSession, query: StatsQuery, dialect: str
) -> list[tuple[Any, int, int]]:
    """(key, item type id, qty) per key and item type: delivered counts once a sheet is
    delivered, ordered counts before."""
    key = _key(query, dialect)
    qty = case(
        (LinenSheet.status == "confirmed", SheetLine.qty_ordered),
        else_=SheetLine.qty_delivered,
    )
    stmt = (
        select(key, SheetLine.item_type_id, func.sum(qty))
        .select_from(LinenSheet)
        .join(SheetLine, SheetLine.sheet_id == LinenSheet.id)
    )
    stmt = _scope(stmt, query).group_by(key, SheetLine.item_type_id)
    return [(k, int(i), int(q)) for k, i, q in (await session.execute(stmt)).all()]


async def invoiced(
    session: AsyncSession, query: StatsQuery, dialect: str
) -> list[tuple[Any, str, int]]:
    """(key, currency, invoiced net) per key and currency, by the sheets' service dates."""
    key = _key(query, dialect)
    stmt = (
        select(key, Invoice.currency, func.sum(InvoiceLine.net))
        .select_from(LinenSheet)
        .join(InvoiceLine, InvoiceLine.linen_sheet_id == LinenSheet.id)
        .join(Invoice, Invoice.id == InvoiceLine.invoice_id)
    )
    stmt = _scope(stmt, query).group_by(key, Invoice.currency)
    return [(k, str(c), int(s)) for k, c, s in (await session.execute(stmt)).all()]
