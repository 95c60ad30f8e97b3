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
from switchboard.linen.item_types.models import ItemType
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
) -> list[tuple[Any, int, int]]:
    """(key, sheets, grams) per key."""
    key = _key(query, dialect)
    stmt = select(
        key, func.count(LinenSheet.id), func.coalesce(func.sum(LinenSheet.weight_grams), 0)
    ).select_from(LinenSheet)
    stmt = _scope(stmt, query).group_by(key)
    return [(k, int(n), int(g)) for k, n, g in (await session.execute(stmt)).all()]


async def estimated(
    session: AsyncSession, query: StatsQuery, dialect: str
) -> list[tuple[Any, str, int]]:
    """(key, currency, estimated cost) per key and currency."""
    key = _key(query, dialect)
    stmt = select(key, LinenSheet.currency, func.sum(LinenSheet.estimated_cost)).select_from(
        LinenSheet
    )
    stmt = _scope(stmt, query).where(LinenSheet.estimated_cost.is_not(None))
    stmt = stmt.group_by(key, LinenSheet.currency)
    return [(k, str(c), int(s)) for k, c, s in (await session.execute(stmt)).all()]


async def items(
    session: AsyncSession, query: StatsQuery, dialect: str
) -> list[tuple[Any, int, str, int]]:
    """(key, item type id, code, qty) per key and item type: delivered counts once a sheet
    is delivered, ordered counts before."""
    key = _key(query, dialect)
    qty = case(
        (LinenSheet.status == "confirmed", SheetLine.qty_ordered),
        else_=SheetLine.qty_delivered,
    )
    stmt = (
        select(key, ItemType.id, ItemType.code, func.sum(qty))
        .select_from(LinenSheet)
        .join(SheetLine, SheetLine.sheet_id == LinenSheet.id)
        .join(ItemType, ItemType.id == SheetLine.item_type_id)
    )
    stmt = _scope(stmt, query).group_by(key, ItemType.id, ItemType.code)
    rows = (await session.execute(stmt)).all()
    return [(k, int(i), str(c), int(q)) for k, i, c, q in rows]


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
