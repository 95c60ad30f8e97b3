"""All SQL for item types; every query starts from a tenant-scoped base statement.

The sets that list an item type are read here; the par levels, price lists and sheet lines
that name one are read by their own features, which are built on item types (``USED_BY`` in
the service)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import PageParams
from switchboard.linen.common import fetch_page, order_by
from switchboard.linen.item_types.models import ItemType

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
