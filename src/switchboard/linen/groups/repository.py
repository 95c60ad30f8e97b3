"""All SQL for property groups and their membership; tenant-scoped base statements."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import PageParams
from switchboard.linen.common import fetch_page, ids_among, order_by
from switchboard.linen.groups.models import GroupMember, PropertyGroup

SORTS: dict[str, Any] = {
    "id": PropertyGroup.id,
    "name": PropertyGroup.name,
    "kind": PropertyGroup.kind,
}


def scoped(tenant_id: int) -> Select[PropertyGroup]:
    return select(PropertyGroup).where(PropertyGroup.tenant_id == tenant_id)


def members(tenant_id: int) -> Select[GroupMember]:
    return select(GroupMember).where(GroupMember.tenant_id == tenant_id)


async def get(session: AsyncSession, tenant_id: int, group_id: int) -> PropertyGroup | None:
    stmt = scoped(tenant_id).where(PropertyGroup.id == group_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def by_name(session: AsyncSession, tenant_id: int, name: str) -> PropertyGroup | None:
    stmt = scoped(tenant_id).where(PropertyGroup.name == name)
    return (await session.execute(stmt)).scalar_one_or_none()


async def many(
    session: AsyncSession, tenant_id: int, ids: Iterable[int]
) -> dict[int, PropertyGroup]:
    wanted = set(ids)
    if not wanted:
        return {}
    rows = await session.scalars(scoped(tenant_id).where(PropertyGroup.id.in_(wanted)))
    return {row.id: row for row in rows}


async def existing_ids(session: AsyncSession, tenant_id: int, ids: Iterable[int]) -> set[int]:
    return await ids_among(session, scoped(tenant_id), PropertyGroup.id, ids)


async def property_ids_of(
    session: AsyncSession, tenant_id: int, group_ids: Iterable[int]
) -> dict[int, list[int]]:
    wanted = set(group_ids)
    result: dict[int, list[int]] = defaultdict(list)
    if wanted:
        stmt = members(tenant_id).where(GroupMember.group_id.in_(wanted))
        for row in await session.scalars(stmt.order_by(GroupMember.property_id)):
            result[row.group_id].append(row.property_id)
    return result


async def group_ids_of(
    session: AsyncSession, tenant_id: int, property_ids: Iterable[int]
) -> dict[int, list[int]]:
    wanted = set(property_ids)
    result: dict[int, list[int]] = defaultdict(list)
    if wanted:
        stmt = members(tenant_id).where(GroupMember.property_id.in_(wanted))
        for row in await session.scalars(stmt.order_by(GroupMember.group_id)):
            result[row.property_id].append(row.group_id)
    return result


async def set_members_of_group(
    session: AsyncSession, tenant_id: int, group_id: int, property_ids: Iterable[int]
) -> None:
    await session.execute(
        delete(GroupMember).where(
            GroupMember.tenant_id == tenant_id, GroupMember.group_id == group_id
        )
    )
    for property_id in sorted(set(property_ids)):
        session.add(GroupMember(group_id=group_id, property_id=property_id, tenant_id=tenant_id))
    await session.flush()


async def set_groups_of_property(
    session: AsyncSession, tenant_id: int, property_id: int, group_ids: Iterable[int]
) -> None:
    await session.execute(
        delete(GroupMember).where(
            GroupMember.tenant_id == tenant_id, GroupMember.property_id == property_id
        )
    )
    for group_id in sorted(set(group_ids)):
        session.add(GroupMember(group_id=group_id, property_id=property_id, tenant_id=tenant_id))
    await session.flush()


async def list_page(
    session: AsyncSession,
    tenant_id: int,
    *,
    kind: str | None,
    property_id: int | None,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[PropertyGroup], int]:
    stmt = scoped(tenant_id)
    if kind is not None:
        stmt = stmt.where(PropertyGroup.kind == kind)
    if property_id is not None:
        stmt = stmt.where(
            PropertyGroup.id.in_(
                members(tenant_id)
                .where(GroupMember.property_id == property_id)
                .with_only_columns(GroupMember.group_id)
            )
        )
    order = order_by(sort, SORTS, default="name", tiebreak=PropertyGroup.id)
    return await fetch_page(session, stmt, paging=paging, order=order)
