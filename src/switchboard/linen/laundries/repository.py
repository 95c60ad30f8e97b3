"""All SQL for laundries, their keys and price lists; tenant-scoped base statements."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import PageParams
from switchboard.linen.common import fetch_page, order_by
from switchboard.linen.laundries.models import Laundry, LaundryKey, PriceList

SORTS: dict[str, Any] = {"id": Laundry.id, "name": Laundry.name, "createdAt": Laundry.created_at}


def scoped(tenant_id: int) -> Select[Laundry]:
    return select(Laundry).where(Laundry.tenant_id == tenant_id)


def keys(tenant_id: int) -> Select[LaundryKey]:
    return select(LaundryKey).where(LaundryKey.tenant_id == tenant_id)


def price_lists(tenant_id: int) -> Select[PriceList]:
    return select(PriceList).where(PriceList.tenant_id == tenant_id)


async def get(session: AsyncSession, tenant_id: int, laundry_id: int) -> Laundry | None:
    stmt = scoped(tenant_id).where(Laundry.id == laundry_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def many(session: AsyncSession, tenant_id: int, ids: Iterable[int]) -> dict[int, Laundry]:
    wanted = set(ids)
    if not wanted:
        return {}
    return {r.id: r for r in await session.scalars(scoped(tenant_id).where(Laundry.id.in_(wanted)))}


async def list_page(
    session: AsyncSession,
    tenant_id: int,
    *,
    active: bool | None,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[Laundry], int]:
    stmt = scoped(tenant_id)
    if active is not None:
        stmt = stmt.where(Laundry.active == active)
    order = order_by(sort, SORTS, default="name", tiebreak=Laundry.id)
    return await fetch_page(session, stmt, paging=paging, order=order)


async def get_key(
    session: AsyncSession, tenant_id: int, laundry_id: int, key_id: int
) -> LaundryKey | None:
    stmt = keys(tenant_id).where(LaundryKey.laundry_id == laundry_id, LaundryKey.id == key_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def key_by_hash(session: AsyncSession, tenant_id: int, key_hash: str) -> LaundryKey | None:
    stmt = keys(tenant_id).where(LaundryKey.key_hash == key_hash)
    return (await session.execute(stmt)).scalar_one_or_none()


async def keys_page(
    session: AsyncSession, tenant_id: int, laundry_id: int, paging: PageParams
) -> tuple[list[LaundryKey], int]:
    stmt = keys(tenant_id).where(LaundryKey.laundry_id == laundry_id)
    return await fetch_page(session, stmt, paging=paging, order=[LaundryKey.id.asc()])


async def get_price_list(
    session: AsyncSession, tenant_id: int, laundry_id: int, price_list_id: int
) -> PriceList | None:
    stmt = price_lists(tenant_id).where(
        PriceList.laundry_id == laundry_id, PriceList.id == price_list_id
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def price_lists_page(
    session: AsyncSession, tenant_id: int, laundry_id: int, paging: PageParams
) -> tuple[list[PriceList], int]:
    stmt = price_lists(tenant_id).where(PriceList.laundry_id == laundry_id)
    order = [PriceList.valid_from.desc(), PriceList.id.asc()]
    return await fetch_page(session, stmt, paging=paging, order=order)


async def overlapping(
    session: AsyncSession,
    tenant_id: int,
    laundry_id: int,
    *,
    currency: str,
    start: dt.date,
    end: dt.date | None,
    exclude_id: int,
) -> PriceList | None:
    stmt = price_lists(tenant_id).where(
        PriceList.laundry_id == laundry_id,
        PriceList.currency == currency,
        PriceList.id != exclude_id,
        or_(PriceList.valid_to.is_(None), PriceList.valid_to >= start),
    )
    if end is not None:
        stmt = stmt.where(PriceList.valid_from <= end)
    return (await session.execute(stmt.limit(1))).scalar_one_or_none()


async def price_lists_of(
    session: AsyncSession, tenant_id: int, laundry_ids: Iterable[int]
) -> list[PriceList]:
    wanted = set(laundry_ids)
    if not wanted:
        return []
    stmt = price_lists(tenant_id).where(PriceList.laundry_id.in_(wanted)).order_by(PriceList.id)
    return list(await session.scalars(stmt))


async def price_lists_pricing(
    session: AsyncSession, tenant_id: int, item_type_id: int
) -> list[tuple[int, str]]:
    """(price list id, laundry name) of the price lists whose items (JSON) name the item type."""
    stmt = (
        price_lists(tenant_id)
        .join(Laundry, Laundry.id == PriceList.laundry_id)
        .with_only_columns(PriceList.id, Laundry.name, PriceList.items)
        .order_by(PriceList.id)
    )
    return [
        (price_list_id, name)
        for price_list_id, name, items in (await session.execute(stmt)).all()
        if any(int(item["itemTypeId"]) == item_type_id for item in items or [])
    ]
