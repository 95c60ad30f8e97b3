"""Property groups: read by every role, written by admins."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import iso_utc
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import Ok, Page
from switchboard.linen.common import ID_MAX, READ_ERRORS, WRITE_ERRORS, IdPath, page, sort_param
from switchboard.linen.deps import PortalAdmin, PortalCaller
from switchboard.linen.groups import service
from switchboard.linen.groups.models import PropertyGroup
from switchboard.linen.groups.repository import SORTS
from switchboard.linen.groups.schemas import GroupCreate, GroupKind, GroupOut, GroupUpdate
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/v1/groups", tags=["property groups"])


async def groups_out(
    session: AsyncSession, tenant_id: IdPath, rows: list[PropertyGroup]
) -> list[GroupOut]:
    members = await service.property_ids_of(
        session, tenant_id=tenant_id, group_ids=[r.id for r in rows]
    )
    return [
        GroupOut(
            id=r.id,
            name=r.name,
            kind=r.kind,
            notes=r.notes,
            property_ids=members.get(r.id, []),
            created_at=iso_utc(r.created_at) or "",
            updated_at=iso_utc(r.updated_at) or "",
        )
        for r in rows
    ]


@router.get(
    "",
    response_model=Page[GroupOut],
    responses=READ_ERRORS,
    summary="List property groups",
    description="Filters: `kind`, `propertyId`. Sort keys: `id`, `name` (default), `kind`.",
)
async def list_groups(
    caller: PortalCaller,
    session: Session,
    paging: Paging,
    kind: Annotated[GroupKind | None, Query()] = None,
    property_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="propertyId")] = None,
    sort: Annotated[str | None, sort_param(SORTS)] = None,
) -> Page[GroupOut]:
    rows, total = await service.list_groups(
        session, tenant_id=caller.tenant_id, kind=kind, property_id=property_id, paging=paging,
        sort=sort,
    )  # fmt: skip
    return page(await groups_out(session, caller.tenant_id, rows), total, paging)


@router.post("", status_code=201, response_model=GroupOut, responses=WRITE_ERRORS, summary="Create")
async def create_group(
    body: GroupCreate, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> GroupOut:
    row = await service.create(session, tenant_id=caller.tenant_id, body=body, clock=runtime.clock)
    return (await groups_out(session, caller.tenant_id, [row]))[0]


@router.get("/{group_id}", response_model=GroupOut, responses=READ_ERRORS, summary="Get")
async def get_group(group_id: IdPath, caller: PortalCaller, session: Session) -> GroupOut:
    row = await service.get(session, tenant_id=caller.tenant_id, group_id=group_id)
    return (await groups_out(session, caller.tenant_id, [row]))[0]


@router.patch("/{group_id}", response_model=GroupOut, responses=WRITE_ERRORS, summary="Update")
async def update_group(
    group_id: IdPath, body: GroupUpdate, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> GroupOut:
    row = await service.update(
        session, tenant_id=caller.tenant_id, group_id=group_id, body=body, clock=runtime.clock
    )
    return (await groups_out(session, caller.tenant_id, [row]))[0]


@router.delete(
    "/{group_id}",
    response_model=Ok,
    responses=WRITE_ERRORS,
    summary="Delete (409 `in_use` while it holds vault entries; delete them first)",
)
async def delete_group(group_id: IdPath, caller: PortalAdmin, session: Session) -> Ok:
    await service.delete(session, tenant_id=caller.tenant_id, group_id=group_id)
    return Ok()
