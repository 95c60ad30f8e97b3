"""All SQL for properties; every query starts from the tenant-scoped base statement."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import PageParams, contains_text
from switchboard.linen.common import fetch_page, ids_among, order_by
from switchboard.linen.groups.models import GroupMember
from switchboard.linen.properties.models import Property

SORTS: dict[str, Any] = {
    "id": Property.id,
    "code": Property.code,
    "name": Property.name,
    "createdAt": Property.created_at,
    "updatedAt": Property.updated_at,
}


def scoped(tenant_id: int) -> Select[Property]:
    return select(Property).where(Property.tenant_id == tenant_id)


async def get(session: AsyncSession, tenant_id: int, property_id: int) -> Property | None:
    stmt = scoped(tenant_id).where(Property.id == property_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def by_code(session: AsyncSession, tenant_id: int, code: str) -> Property | None:
    stmt = scoped(tenant_id).where(Property.code == code)
    return (await session.execute(stmt)).scalar_one_or_none()


async def many(session: AsyncSession, tenant_id: int, ids: Iterable[int]) -> dict[int, Property]:
    wanted = set(ids)
    if not wanted:
        return {}
    rows = await session.scalars(scoped(tenant_id).where(Property.id.in_(wanted)))
    return {r.id: r for r in rows}


async def existing_ids(session: AsyncSession, tenant_id: int, ids: Iterable[int]) -> set[int]:
    """Those of ``ids`` that are properties of the tenant."""
    return await ids_among(session, scoped(tenant_id), Property.id, ids)


async def codes_with_par_of(session: AsyncSession, tenant_id: int, item_type_id: int) -> list[str]:
    """Codes of the properties whose par levels (JSON) name ``item_type_id``."""
    stmt = scoped(tenant_id).with_only_columns(Property.code, Property.linen_par)
    return [
        code
        for code, par in (await session.execute(stmt.order_by(Property.code))).all()
        if any(int(line["itemTypeId"]) == item_type_id for line in par or [])
    ]


async def list_page(
    session: AsyncSession,
    tenant_id: int,
    *,
    active: bool | None,
    group_id: int | None,
    laundry_id: int | None,
    q: str | None,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[Property], int]:
    stmt = scoped(tenant_id)
    if active is not None:
        stmt = stmt.where(Property.active == active)
    if laundry_id is not None:
        stmt = stmt.where(Property.default_laundry_id == laundry_id)
    if group_id is not None:
        members = select(GroupMember.property_id).where(
            GroupMember.tenant_id == tenant_id, GroupMember.group_id == group_id
        )
        stmt = stmt.where(Property.id.in_(members))
    if q:
        stmt = stmt.where(
            or_(
                contains_text(Property.code, q),
                contains_text(Property.name, q),
                contains_text(Property.external_ref, q),
            )
        )
    order = order_by(sort, SORTS, default="code", tiebreak=Property.id)
    return await fetch_page(session, stmt, paging=paging, order=order)
