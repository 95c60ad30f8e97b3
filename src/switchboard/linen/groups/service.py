"""Group rules: unique names per tenant; membership refers to the tenant's own properties.

Properties are built on groups (a property names its groups when it is written, shows them
and is listed by them), and vault entries on both, so a group's rules reach neither: the
properties' service registers how a membership's property ids are checked (``MEMBERS``),
the vault's how the entries a group holds are found (``HELD_BY``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.kit.paging import PageParams
from switchboard.linen.common import delete_unless_used, few
from switchboard.linen.groups import repository
from switchboard.linen.groups.models import PropertyGroup
from switchboard.linen.groups.schemas import GroupCreate, GroupUpdate
from switchboard.linen.hooks import Hook, Uses


class ExistingProperties(Protocol):
    """Those of ``ids`` that are properties of the tenant."""

    def __call__(
        self, session: AsyncSession, tenant_id: int, ids: Collection[int]
    ) -> Awaitable[set[int]]: ...


# The property ids a membership names are the tenant's properties.
MEMBERS = Hook[ExistingProperties]("checking a group's members", by="properties")
# The labels of the vault entries a group holds, which keep it from deletion.
HELD_BY = Uses("a property group", "vault")


async def get(session: AsyncSession, *, tenant_id: int, group_id: int) -> PropertyGroup:
    row = await repository.get(session, tenant_id, group_id)
    if row is None:
        raise NotFound(f"no property group {group_id}")
    return row


async def many(
    session: AsyncSession, *, tenant_id: int, ids: list[int]
) -> dict[int, PropertyGroup]:
    return await repository.many(session, tenant_id, ids)


async def require_ids(session: AsyncSession, *, tenant_id: int, ids: list[int], field: str) -> None:
    missing = sorted(set(ids) - await repository.existing_ids(session, tenant_id, ids))
    if missing:
        raise BadRequest(f"{field}: unknown property group {missing[0]}", code="unknown_reference")


async def property_ids_of(
    session: AsyncSession, *, tenant_id: int, group_ids: list[int]
) -> dict[int, list[int]]:
    return await repository.property_ids_of(session, tenant_id, group_ids)


async def group_ids_of(
    session: AsyncSession, *, tenant_id: int, property_ids: list[int]
) -> dict[int, list[int]]:
    return await repository.group_ids_of(session, tenant_id, property_ids)


async def set_groups_of_property(
    session: AsyncSession, *, tenant_id: int, property_id: int, group_ids: list[int]
) -> None:
    await require_ids(session, tenant_id=tenant_id, ids=group_ids, field="groupIds")
    await repository.set_groups_of_property(session, tenant_id, property_id, group_ids)


async def _require_properties(session: AsyncSession, tenant_id: int, ids: list[int]) -> None:
    missing = sorted(set(ids) - await MEMBERS()(session, tenant_id, ids))
    if missing:
        raise BadRequest(f"propertyIds: unknown property {missing[0]}", code="unknown_reference")


async def _check_name(session: AsyncSession, tenant_id: int, name: str, own_id: int) -> None:
    other = await repository.by_name(session, tenant_id, name)
    if other is not None and other.id != own_id:
        raise Conflict(f"a group named {name!r} already exists", code="duplicate_name")


async def list_groups(
    session: AsyncSession,
    *,
    tenant_id: int,
    kind: str | None,
    property_id: int | None,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[PropertyGroup], int]:
    return await repository.list_page(
        session, tenant_id, kind=kind, property_id=property_id, paging=paging, sort=sort
    )


async def create(
    session: AsyncSession, *, tenant_id: int, body: GroupCreate, clock: Clock
) -> PropertyGroup:
    await _check_name(session, tenant_id, body.name, 0)
    await _require_properties(session, tenant_id, body.property_ids)
    now = clock.now()
    row = PropertyGroup(
        tenant_id=tenant_id,
        name=body.name,
        kind=body.kind,
        notes=body.notes,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    await repository.set_members_of_group(session, tenant_id, row.id, body.property_ids)
    return row


async def update(
    session: AsyncSession, *, tenant_id: int, group_id: int, body: GroupUpdate, clock: Clock
) -> PropertyGroup:
    row = await get(session, tenant_id=tenant_id, group_id=group_id)
    if body.name is not None:
        await _check_name(session, tenant_id, body.name, row.id)
        row.name = body.name
    if body.kind is not None:
        row.kind = body.kind
    if body.notes is not None:
        row.notes = body.notes
    if body.property_ids is not None:
        await _require_properties(session, tenant_id, body.property_ids)
        await repository.set_members_of_group(session, tenant_id, row.id, body.property_ids)
    row.updated_at = clock.now()
    await session.flush()
    return row


async def delete(session: AsyncSession, *, tenant_id: int, group_id: int) -> None:
    """Membership goes with the group; vault entries of the group keep it (409 ``in_use``).
    A group has no active flag to retire it by: its entries are deleted first."""
    row = await get(session, tenant_id=tenant_id, group_id=group_id)
    labels = await HELD_BY.of(session, tenant_id=tenant_id, row_id=row.id)
    if labels:
        raise Conflict(
            f"the property group still holds vault entries ({few(labels)}); delete them first",
            code="in_use",
        )
    await repository.set_members_of_group(session, tenant_id, row.id, [])
    await delete_unless_used(
        session, row, what="property group", hint="delete what refers to it first"
    )
