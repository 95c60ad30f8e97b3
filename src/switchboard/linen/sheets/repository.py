"""All SQL for linen sheets and their lines; tenant-scoped base statements."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Select, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import PageParams
from switchboard.linen.common import fetch_page, order_by
from switchboard.linen.groups.models import GroupMember
from switchboard.linen.sheets.models import LinenSheet, SheetLine

Naming = Literal["item_type_id", "property_id", "laundry_id"]
SORTS: dict[str, Any] = {
    "id": LinenSheet.id,
    "number": LinenSheet.number,
    "serviceDate": LinenSheet.service_date,
    "status": LinenSheet.status,
    "createdAt": LinenSheet.created_at,
    "updatedAt": LinenSheet.updated_at,
}


@dataclass(frozen=True, slots=True)
class SheetFilter:
    property_id: int | None = None
    group_id: int | None = None
    laundry_id: int | None = None
    statuses: tuple[str, ...] = ()
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    updated_since: dt.datetime | None = None
    ever_confirmed: bool = False


def scoped(tenant_id: int) -> Select[LinenSheet]:
    return select(LinenSheet).where(LinenSheet.tenant_id == tenant_id)


def lines(tenant_id: int) -> Select[SheetLine]:
    return select(SheetLine).where(SheetLine.tenant_id == tenant_id)


async def get(session: AsyncSession, tenant_id: int, sheet_id: int) -> LinenSheet | None:
    stmt = scoped(tenant_id).where(LinenSheet.id == sheet_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def many(session: AsyncSession, tenant_id: int, ids: Iterable[int]) -> dict[int, LinenSheet]:
    wanted = set(ids)
    if not wanted:
        return {}
    rows = await session.scalars(scoped(tenant_id).where(LinenSheet.id.in_(wanted)))
    return {r.id: r for r in rows}


async def has_sheet_for(
    session: AsyncSession, tenant_id: int, *, laundry_id: int, property_id: int
) -> bool:
    """Whether ``laundry_id`` has ever had a sheet of ``property_id`` (any status)."""
    stmt = scoped(tenant_id).where(
        LinenSheet.laundry_id == laundry_id, LinenSheet.property_id == property_id
    )
    return bool(await session.scalar(select(stmt.exists())))


async def next_seq(session: AsyncSession, tenant_id: int, year: int) -> int:
    stmt = (
        scoped(tenant_id).where(LinenSheet.year == year).with_only_columns(func.max(LinenSheet.seq))
    )
    return int(await session.scalar(stmt) or 0) + 1


async def lines_of(
    session: AsyncSession, tenant_id: int, sheet_ids: Iterable[int]
) -> dict[int, list[SheetLine]]:
    wanted = set(sheet_ids)
    result: dict[int, list[SheetLine]] = defaultdict(list)
    if wanted:
        stmt = lines(tenant_id).where(SheetLine.sheet_id.in_(wanted)).order_by(SheetLine.id)
        for row in await session.scalars(stmt):
            result[row.sheet_id].append(row)
    return result


async def open_chunk(
    session: AsyncSession,
    tenant_id: int,
    statuses: tuple[str, ...],
    *,
    laundry_id: int | None,
    start: dt.date | None,
    end: dt.date | None,
    item_type_ids: Collection[int] | None,
    after_id: int,
    limit: int,
) -> list[LinenSheet]:
    """The next ``limit`` sheets in ``statuses`` after ``after_id`` (by id) of the laundry and
    service dates, or with a line of one of the item types."""
    stmt = scoped(tenant_id).where(LinenSheet.status.in_(statuses), LinenSheet.id > after_id)
    if laundry_id is not None:
        stmt = stmt.where(LinenSheet.laundry_id == laundry_id)
    if start is not None:
        stmt = stmt.where(LinenSheet.service_date >= start)
    if end is not None:
        stmt = stmt.where(LinenSheet.service_date <= end)
    if item_type_ids is not None:
        holding = lines(tenant_id).where(SheetLine.item_type_id.in_(set(item_type_ids)))
        stmt = stmt.where(LinenSheet.id.in_(holding.with_only_columns(SheetLine.sheet_id)))
    return list(await session.scalars(stmt.order_by(LinenSheet.id).limit(limit)))


async def replace_lines(
    session: AsyncSession, tenant_id: int, sheet_id: int, new_lines: list[SheetLine]
) -> None:
    await session.execute(
        delete(SheetLine).where(SheetLine.tenant_id == tenant_id, SheetLine.sheet_id == sheet_id)
    )
    session.add_all(new_lines)
    await session.flush()


def _filtered(tenant_id: int, where: SheetFilter) -> Select[LinenSheet]:
    stmt = scoped(tenant_id)
    if where.property_id is not None:
        stmt = stmt.where(LinenSheet.property_id == where.property_id)
    if where.laundry_id is not None:
        stmt = stmt.where(LinenSheet.laundry_id == where.laundry_id)
    if where.group_id is not None:
        members = select(GroupMember.property_id).where(
            GroupMember.tenant_id == tenant_id, GroupMember.group_id == where.group_id
        )
        stmt = stmt.where(LinenSheet.property_id.in_(members))
    if where.statuses:
        stmt = stmt.where(LinenSheet.status.in_(where.statuses))
    if where.date_from is not None:
        stmt = stmt.where(LinenSheet.service_date >= where.date_from)
    if where.date_to is not None:
        stmt = stmt.where(LinenSheet.service_date <= where.date_to)
    if where.updated_since is not None:
        stmt = stmt.where(LinenSheet.updated_at >= where.updated_since)
    if where.ever_confirmed:
        stmt = stmt.where(LinenSheet.confirmed_at.is_not(None))
    return stmt


async def list_page(
    session: AsyncSession,
    tenant_id: int,
    where: SheetFilter,
    *,
    paging: PageParams,
    sort: str | None,
    default_sort: str = "-serviceDate",
) -> tuple[list[LinenSheet], int]:
    order = order_by(sort, SORTS, default=default_sort, tiebreak=LinenSheet.id)
    return await fetch_page(session, _filtered(tenant_id, where), paging=paging, order=order)


async def running_balance(
    session: AsyncSession, tenant_id: int, property_id: int, until: dt.date | None
) -> list[tuple[int, int, int]]:
    """(item type, ordered, accepted) summed over the property's delivered and invoiced
    sheets, up to ``until`` (service date, inclusive)."""
    stmt = (
        lines(tenant_id)
        .join(LinenSheet, LinenSheet.id == SheetLine.sheet_id)
        .where(
            LinenSheet.tenant_id == tenant_id,
            LinenSheet.property_id == property_id,
            LinenSheet.status.in_(("delivered", "invoiced")),
        )
        .with_only_columns(
            SheetLine.item_type_id,
            func.sum(SheetLine.qty_ordered),
            func.sum(SheetLine.qty_delivered - SheetLine.qty_rejected),
        )
        .group_by(SheetLine.item_type_id)
        .order_by(SheetLine.item_type_id)
    )
    if until is not None:
        stmt = stmt.where(LinenSheet.service_date <= until)
    rows = (await session.execute(stmt)).all()
    return [(int(i), int(o or 0), int(a or 0)) for i, o, a in rows]


async def numbers_naming(
    session: AsyncSession, tenant_id: int, by: Naming, row_id: int, *, limit: int
) -> list[str]:
    """Numbers of (at most ``limit``) sheets naming row ``row_id`` ``by``: as their property,
    their laundry, or the item type of a line."""
    stmt = scoped(tenant_id)
    if by == "item_type_id":
        stmt = stmt.join(SheetLine, SheetLine.sheet_id == LinenSheet.id)
        stmt = stmt.where(SheetLine.item_type_id == row_id)
    else:
        column = LinenSheet.property_id if by == "property_id" else LinenSheet.laundry_id
        stmt = stmt.where(column == row_id)
    numbers = stmt.with_only_columns(LinenSheet.number).distinct().order_by(LinenSheet.number)
    return list(await session.scalars(numbers.limit(limit)))
