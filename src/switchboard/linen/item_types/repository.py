"""All SQL for item types; every query starts from a tenant-scoped base statement.

What refers to an item type is read here too, as a foreign key's check would be: the par
levels, price lists and sets that keep its id in JSON, and the sheet lines. Item types need
none of the features built on them to refuse a delete."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import PageParams
from switchboard.linen.common import fetch_page, order_by
from switchboard.linen.item_types.models import ItemType
from switchboard.linen.laundries.models import Laundry, PriceList
from switchboard.linen.properties.models import Property
from switchboard.linen.sheets.models import LinenSheet, SheetLine

SORTS: dict[str, Any] = {
    "id": ItemType.id,
    "code": ItemType.code,
    "name": ItemType.name,
    "category": ItemType.category,
}


def scoped(tenant_id: int) -> Select[ItemType]:
    return select(ItemType).where(ItemType.tenant_id == tenant_id)


async def get(
    session: AsyncSession, tenant_id: int, item_type_id: int, *, lock: bool = False
) -> ItemType | None:
    """``lock``: hold the row (PostgreSQL's FOR UPDATE) until the transaction ends, so no
    concurrent writer can start referring to it meanwhile (see ``many``)."""
    stmt = scoped(tenant_id).where(ItemType.id == item_type_id)
    if lock:
        stmt = stmt.with_for_update()
    return (await session.execute(stmt)).scalar_one_or_none()


async def by_code(session: AsyncSession, tenant_id: int, code: str) -> ItemType | None:
    stmt = scoped(tenant_id).where(ItemType.code == code)
    return (await session.execute(stmt)).scalar_one_or_none()


async def many(
    session: AsyncSession, tenant_id: int, ids: Iterable[int], *, share: bool = False
) -> dict[int, ItemType]:
    """``share``: the caller stores references to these rows in a JSON column (no foreign key
    guards them), so they are held with FOR KEY SHARE: a concurrent delete or change of unit
    waits for this transaction and then sees the reference (SQLite has one writer anyway)."""
    wanted = set(ids)
    if not wanted:
        return {}
    stmt = scoped(tenant_id).where(ItemType.id.in_(wanted))
    if share:
        stmt = stmt.with_for_update(read=True, key_share=True)
    return {row.id: row for row in await session.scalars(stmt)}


async def sets_containing(
    session: AsyncSession, tenant_id: int, item_type_id: int
) -> list[ItemType]:
    """The sets that list ``item_type_id`` as a component (components are JSON), by code."""
    stmt = scoped(tenant_id).where(ItemType.unit == "set").order_by(ItemType.code)
    return [
        row
        for row in await session.scalars(stmt)
        if any(int(c["itemTypeId"]) == item_type_id for c in row.components)
    ]


async def list_page(
    session: AsyncSession,
    tenant_id: int,
    *,
    category: str | None,
    active: bool | None,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[ItemType], int]:
    stmt = scoped(tenant_id)
    if category is not None:
        stmt = stmt.where(ItemType.category == category)
    if active is not None:
        stmt = stmt.where(ItemType.active == active)
    order = order_by(sort, SORTS, default="code", tiebreak=ItemType.id)
    return await fetch_page(session, stmt, paging=paging, order=order)


async def properties_with_par_of(
    session: AsyncSession, tenant_id: int, item_type_id: int
) -> list[str]:
    """Codes of the properties whose par levels (JSON) name ``item_type_id``."""
    stmt = select(Property.code, Property.linen_par).where(Property.tenant_id == tenant_id)
    return [
        code
        for code, par in (await session.execute(stmt.order_by(Property.code))).all()
        if any(int(line["itemTypeId"]) == item_type_id for line in par or [])
    ]


async def price_lists_pricing(
    session: AsyncSession, tenant_id: int, item_type_id: int
) -> list[tuple[int, str]]:
    """(price list id, laundry name) of the price lists whose items (JSON) name the item type."""
    stmt = (
        select(PriceList.id, Laundry.name, PriceList.items)
        .where(PriceList.tenant_id == tenant_id)
        .join(Laundry, Laundry.id == PriceList.laundry_id)
        .order_by(PriceList.id)
    )
    return [
        (price_list_id, name)
        for price_list_id, name, items in (await session.execute(stmt)).all()
        if any(int(item["itemTypeId"]) == item_type_id for item in items or [])
    ]


async def sheets_with(
    session: AsyncSession, tenant_id: int, item_type_id: int, *, limit: int
) -> list[str]:
    """Numbers of (at most ``limit``) sheets with a line of the item type."""
    stmt = (
        select(LinenSheet.number)
        .where(LinenSheet.tenant_id == tenant_id)
        .join(SheetLine, SheetLine.sheet_id == LinenSheet.id)
        .where(SheetLine.item_type_id == item_type_id)
        .distinct()
        .order_by(LinenSheet.number)
        .limit(limit)
    )
    return list(await session.scalars(stmt))
