"""All SQL for the vault and its reveal audit log; tenant-scoped base statements."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import PageParams
from switchboard.linen.common import fetch_page, order_by
from switchboard.linen.groups.models import GroupMember
from switchboard.linen.vault.models import VaultEntry, VaultReveal

SORTS: dict[str, Any] = {
    "id": VaultEntry.id,
    "label": VaultEntry.label,
    "kind": VaultEntry.kind,
    "updatedAt": VaultEntry.updated_at,
}


def scoped(tenant_id: int) -> Select[VaultEntry]:
    return select(VaultEntry).where(VaultEntry.tenant_id == tenant_id)


def reveals(tenant_id: int) -> Select[VaultReveal]:
    return select(VaultReveal).where(VaultReveal.tenant_id == tenant_id)


async def get(session: AsyncSession, tenant_id: int, entry_id: int) -> VaultEntry | None:
    stmt = scoped(tenant_id).where(VaultEntry.id == entry_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_page(
    session: AsyncSession,
    tenant_id: int,
    *,
    property_id: int | None,
    group_id: int | None,
    kind: str | None,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[VaultEntry], int]:
    stmt = scoped(tenant_id)
    if property_id is not None:
        # A property's entries include those of the groups it belongs to.
        groups = select(GroupMember.group_id).where(
            GroupMember.tenant_id == tenant_id, GroupMember.property_id == property_id
        )
        stmt = stmt.where((VaultEntry.property_id == property_id) | VaultEntry.group_id.in_(groups))
    if group_id is not None:
        stmt = stmt.where(VaultEntry.group_id == group_id)
    if kind is not None:
        stmt = stmt.where(VaultEntry.kind == kind)
    order = order_by(sort, SORTS, default="label", tiebreak=VaultEntry.id)
    return await fetch_page(session, stmt, paging=paging, order=order)


async def labels_of(
    session: AsyncSession, tenant_id: int, *, group_id: int | None = None,
    property_id: int | None = None,
) -> list[str]:  # fmt: skip
    """Labels of the vault entries the group, or the property, holds."""
    owner = VaultEntry.group_id if group_id is not None else VaultEntry.property_id
    stmt = (
        scoped(tenant_id)
        .where(owner == (group_id if group_id is not None else property_id))
        .with_only_columns(VaultEntry.label)
        .order_by(VaultEntry.label)
    )
    return list(await session.scalars(stmt))


async def reveals_page(
    session: AsyncSession, tenant_id: int, entry_id: int, paging: PageParams
) -> tuple[list[VaultReveal], int]:
    stmt = reveals(tenant_id).where(VaultReveal.entry_id == entry_id)
    order = [VaultReveal.revealed_at.desc(), VaultReveal.id.desc()]
    return await fetch_page(session, stmt, paging=paging, order=order)
