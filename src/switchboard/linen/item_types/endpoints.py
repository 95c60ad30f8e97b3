"""Item types: read by every role, written by admins."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from switchboard.kit.clock import iso_utc
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import Ok, Page
from switchboard.linen.common import READ_ERRORS, WRITE_ERRORS, IdPath, page, sort_param
from switchboard.linen.deps import PortalAdmin, PortalCaller
from switchboard.linen.item_types import service
from switchboard.linen.item_types.models import ItemType
from switchboard.linen.item_types.repository import SORTS
from switchboard.linen.item_types.schemas import (
    Category,
    ComponentOut,
    ItemTypeCreate,
    ItemTypeOut,
    ItemTypeUpdate,
)
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/v1/item-types", tags=["item types"])


def item_type_out(row: ItemType) -> ItemTypeOut:
    return ItemTypeOut(
        id=row.id,
        code=row.code,
        name=row.name,
        category=row.category,
        size=row.size,
        unit=row.unit,
        weight_grams=row.weight_grams,
        active=row.active,
        components=[ComponentOut.model_validate(c) for c in row.components],
        created_at=iso_utc(row.created_at) or "",
        updated_at=iso_utc(row.updated_at) or "",
    )


@router.get(
    "",
    response_model=Page[ItemTypeOut],
    responses=READ_ERRORS,
    summary="List item types",
    description="Sort keys: `id`, `code` (default), `name`, `category`.",
)
async def list_item_types(
    caller: PortalCaller,
    session: Session,
    paging: Paging,
    category: Annotated[Category | None, Query()] = None,
    active: Annotated[bool | None, Query()] = None,
    sort: Annotated[str | None, sort_param(SORTS)] = None,
) -> Page[ItemTypeOut]:
    rows, total = await service.list_item_types(
        session, tenant_id=caller.tenant_id, category=category, active=active, paging=paging,
        sort=sort,
    )  # fmt: skip
    return page([item_type_out(r) for r in rows], total, paging)


@router.post(
    "", status_code=201, response_model=ItemTypeOut, responses=WRITE_ERRORS, summary="Create"
)
async def create_item_type(
    body: ItemTypeCreate, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> ItemTypeOut:
    row = await service.create(session, tenant_id=caller.tenant_id, body=body, clock=runtime.clock)
    return item_type_out(row)


@router.get("/{item_type_id}", response_model=ItemTypeOut, responses=READ_ERRORS, summary="Get")
async def get_item_type(
    item_type_id: IdPath, caller: PortalCaller, session: Session
) -> ItemTypeOut:
    row = await service.get(session, tenant_id=caller.tenant_id, item_type_id=item_type_id)
    return item_type_out(row)


@router.patch(
    "/{item_type_id}", response_model=ItemTypeOut, responses=WRITE_ERRORS, summary="Update"
)
async def update_item_type(
    item_type_id: IdPath,
    body: ItemTypeUpdate,
    caller: PortalAdmin,
    session: Session,
    runtime: RuntimeDep,
) -> ItemTypeOut:
    row = await service.update(
        session, tenant_id=caller.tenant_id, item_type_id=item_type_id, body=body,
        clock=runtime.clock,
    )  # fmt: skip
    return item_type_out(row)


@router.delete(
    "/{item_type_id}",
    response_model=Ok,
    responses=WRITE_ERRORS,
    summary=(
        "Delete (409 `in_use` while sets, par levels, price lists or sheets use it; "
        "deactivate instead)"
    ),
)
async def delete_item_type(item_type_id: IdPath, caller: PortalAdmin, session: Session) -> Ok:
    await service.delete(session, tenant_id=caller.tenant_id, item_type_id=item_type_id)
    return Ok()
