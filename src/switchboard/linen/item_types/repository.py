"""All SQL for item types; every query starts from the tenant-scoped base statement."""

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


async def get(session: AsyncSession, tenant_id: int, item_type_id: int) -> ItemType | None:
    stmt = scoped(tenant_id).where(ItemType.id == item_type_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def by_code(session: AsyncSession, tenant_id: int, code: str) -> ItemType | None:
    stmt = scoped(tenant_id).where(ItemType.code == code)
    return (await session.execute(stmt)).scalar_one_or_none()


async def many(session: AsyncSession, tenant_id: int, ids: Iterable[int]) -> dict[int, ItemType]:
    wanted = set(ids)
    if not wanted:
        return {}
    rows = await session.scalars(scoped(tenant_id).where(ItemType.id.in_(wanted)))
    return {row.id: row for row in rows}


async def sets_containing(session: AsyncSession, tenant_id: int, item_type_id: int) -> list[str]:
    """Codes of the sets that list ``item_type_id`` as a component (components are JSON)."""
    stmt = scoped(tenant_id).where(ItemType.unit == "set")
    return [
        row.code
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
