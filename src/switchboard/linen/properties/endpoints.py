"""Properties: read by every role, written by admins."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import iso_utc
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import Ok, Page
from switchboard.linen.common import ID_MAX, READ_ERRORS, WRITE_ERRORS, IdPath, page, sort_param
from switchboard.linen.deps import PortalAdmin, PortalCaller
from switchboard.linen.groups import service as groups
from switchboard.linen.laundries.schemas import AddressOut
from switchboard.linen.properties import service
from switchboard.linen.properties.models import Property
from switchboard.linen.properties.repository import SORTS
from switchboard.linen.properties.schemas import (
    BedOut,
    ParLineOut,
    PropertyCreate,
    PropertyOut,
    PropertyUpdate,
)
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/v1/properties", tags=["properties"])


async def properties_out(
    session: AsyncSession, tenant_id: IdPath, rows: list[Property]
) -> list[PropertyOut]:
    memberships = await groups.group_ids_of(
        session, tenant_id=tenant_id, property_ids=[r.id for r in rows]
    )
    return [
        PropertyOut(
            id=r.id,
            code=r.code,
            name=r.name,
            external_ref=r.external_ref,
            active=r.active,
            address=AddressOut.model_validate(r.address or {}),
            timezone=r.timezone,
            bedrooms=r.bedrooms,
            bathrooms=r.bathrooms,
            max_guests=r.max_guests,
            beds=[BedOut.model_validate(b) for b in r.beds],
            default_laundry_id=r.default_laundry_id,
            linen_par=[ParLineOut.model_validate(p) for p in r.linen_par],
            delivery_note=r.delivery_note,
            group_ids=memberships.get(r.id, []),
            notes=r.notes,
            created_at=iso_utc(r.created_at) or "",
            updated_at=iso_utc(r.updated_at) or "",
        )
        for r in rows
    ]


@router.get(
    "",
    response_model=Page[PropertyOut],
    responses=READ_ERRORS,
    summary="List properties",
    description=(
        "Filters: `active`, `groupId`, `laundryId` (default laundry), `q` (code, name or "
        "external reference contains). Sort keys: `id`, `code` (default), `name`, `createdAt`, "
        "`updatedAt`."
    ),
)
async def list_properties(
    caller: PortalCaller,
    session: Session,
    paging: Paging,
    active: Annotated[bool | None, Query()] = None,
    group_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="groupId")] = None,
    laundry_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="laundryId")] = None,
    q: Annotated[str | None, Query(max_length=100)] = None,
    sort: Annotated[str | None, sort_param(SORTS)] = None,
) -> Page[PropertyOut]:
    rows, total = await service.list_properties(
        session, tenant_id=caller.tenant_id, active=active, group_id=group_id,
        laundry_id=laundry_id, q=q, paging=paging, sort=sort,
    )  # fmt: skip
    return page(await properties_out(session, caller.tenant_id, rows), total, paging)


@router.post(
    "", status_code=201, response_model=PropertyOut, responses=WRITE_ERRORS, summary="Create"
)
async def create_property(
    body: PropertyCreate, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> PropertyOut:
    row = await service.create(session, tenant_id=caller.tenant_id, body=body, clock=runtime.clock)
    return (await properties_out(session, caller.tenant_id, [row]))[0]


@router.get("/{property_id}", response_model=PropertyOut, responses=READ_ERRORS, summary="Get")
async def get_property(property_id: IdPath, caller: PortalCaller, session: Session) -> PropertyOut:
    row = await service.get(session, tenant_id=caller.tenant_id, property_id=property_id)
    return (await properties_out(session, caller.tenant_id, [row]))[0]


@router.patch(
    "/{property_id}", response_model=PropertyOut, responses=WRITE_ERRORS, summary="Update"
)
async def update_property(
    property_id: IdPath,
    body: PropertyUpdate,
    caller: PortalAdmin,
    session: Session,
    runtime: RuntimeDep,
) -> PropertyOut:
    row = await service.update(
        session, tenant_id=caller.tenant_id, property_id=property_id, body=body,
        clock=runtime.clock,
    )  # fmt: skip
    return (await properties_out(session, caller.tenant_id, [row]))[0]


@router.delete(
    "/{property_id}",
    response_model=Ok,
    responses=WRITE_ERRORS,
    summary="Delete (409 `in_use`, naming them, once sheets, invoices or vault entries refer to "
    "it; deactivate instead)",
)
async def delete_property(property_id: IdPath, caller: PortalAdmin, session: Session) -> Ok:
    await service.delete(session, tenant_id=caller.tenant_id, property_id=property_id)
    return Ok()
