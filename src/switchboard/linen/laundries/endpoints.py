"""Laundries, their price lists and Laundry API keys: read by every role, written by admins."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from switchboard.kit.clock import iso_utc
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import Ok, Page
from switchboard.linen.common import READ_ERRORS, WRITE_ERRORS, IdPath, page, sort_param
from switchboard.linen.deps import PortalAdmin, PortalCaller
from switchboard.linen.laundries import service
from switchboard.linen.laundries.models import Laundry, LaundryKey, PriceList
from switchboard.linen.laundries.repository import SORTS
from switchboard.linen.laundries.schemas import (
    AddressOut,
    KeyCreate,
    KeyCreated,
    KeyOut,
    LaundryCreate,
    LaundryOut,
    LaundryUpdate,
    PriceItemOut,
    PriceListIn,
    PriceListOut,
)
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/v1/laundries", tags=["laundries"])


def laundry_out(row: Laundry) -> LaundryOut:
    return LaundryOut(
        id=row.id,
        name=row.name,
        contact_name=row.contact_name,
        email=row.email,
        phone=row.phone,
        address=AddressOut.model_validate(row.address or {}),
        vat_id=row.vat_id,
        active=row.active,
        created_at=iso_utc(row.created_at) or "",
        updated_at=iso_utc(row.updated_at) or "",
    )


def key_out(row: LaundryKey) -> KeyOut:
    return KeyOut(
        id=row.id,
        laundry_id=row.laundry_id,
        name=row.name,
        prefix=row.prefix,
        created_at=iso_utc(row.created_at) or "",
        created_by=row.created_by,
        last_used_at=iso_utc(row.last_used_at),
        revoked_at=iso_utc(row.revoked_at),
    )


def key_created(row: LaundryKey, plaintext: str) -> KeyCreated:
    return KeyCreated(**key_out(row).model_dump(by_alias=False), key=plaintext)


def price_list_out(row: PriceList) -> PriceListOut:
    return PriceListOut(
        id=row.id,
        laundry_id=row.laundry_id,
        name=row.name,
        currency=row.currency,
        valid_from=row.valid_from,
        valid_to=row.valid_to,
        per_kg=row.per_kg,
        delivery_fee=row.delivery_fee,
        late_order_surcharge=row.late_order_surcharge,
        items=[PriceItemOut.model_validate(item) for item in row.items],
        created_at=iso_utc(row.created_at) or "",
        updated_at=iso_utc(row.updated_at) or "",
    )


@router.get(
    "",
    response_model=Page[LaundryOut],
    responses=READ_ERRORS,
    summary="List laundries",
    description="Filter: `active`. Sort keys: `id`, `name` (default), `createdAt`.",
)
async def list_laundries(
    caller: PortalCaller,
    session: Session,
    paging: Paging,
    active: Annotated[bool | None, Query()] = None,
    sort: Annotated[str | None, sort_param(SORTS)] = None,
) -> Page[LaundryOut]:
    rows, total = await service.list_laundries(
        session, tenant_id=caller.tenant_id, active=active, paging=paging, sort=sort
    )
    return page([laundry_out(r) for r in rows], total, paging)


@router.post(
    "", status_code=201, response_model=LaundryOut, responses=WRITE_ERRORS, summary="Create"
)
async def create_laundry(
    body: LaundryCreate, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> LaundryOut:
    row = await service.create(session, tenant_id=caller.tenant_id, body=body, clock=runtime.clock)
    return laundry_out(row)


@router.get("/{laundry_id}", response_model=LaundryOut, responses=READ_ERRORS, summary="Get")
async def get_laundry(laundry_id: IdPath, caller: PortalCaller, session: Session) -> LaundryOut:
    return laundry_out(
        await service.get(session, tenant_id=caller.tenant_id, laundry_id=laundry_id)
    )


@router.patch("/{laundry_id}", response_model=LaundryOut, responses=WRITE_ERRORS, summary="Update")
async def update_laundry(
    laundry_id: IdPath,
    body: LaundryUpdate,
    caller: PortalAdmin,
    session: Session,
    runtime: RuntimeDep,
) -> LaundryOut:
    row = await service.update(
        session, tenant_id=caller.tenant_id, laundry_id=laundry_id, body=body, clock=runtime.clock
    )
    return laundry_out(row)


@router.delete(
    "/{laundry_id}",
    response_model=Ok,
    responses=WRITE_ERRORS,
    summary="Delete (409 `in_use`, naming them, once it has sheets or invoices; deactivate "
    "instead)",
)
async def delete_laundry(laundry_id: IdPath, caller: PortalAdmin, session: Session) -> Ok:
    await service.delete(session, tenant_id=caller.tenant_id, laundry_id=laundry_id)
    return Ok()


@router.get(
    "/{laundry_id}/keys",
    response_model=Page[KeyOut],
    responses=READ_ERRORS,
    summary="List the laundry's API keys (prefix only; the key itself is never shown again)",
)
async def list_keys(
    laundry_id: IdPath, caller: PortalCaller, session: Session, paging: Paging
) -> Page[KeyOut]:
    rows, total = await service.list_keys(
        session, tenant_id=caller.tenant_id, laundry_id=laundry_id, paging=paging
    )
    return page([key_out(r) for r in rows], total, paging)


@router.post(
    "/{laundry_id}/keys",
    status_code=201,
    response_model=KeyCreated,
    responses=WRITE_ERRORS,
    summary="Issue a Laundry API key (shown once)",
)
async def issue_key(
    laundry_id: IdPath, body: KeyCreate, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> KeyCreated:
    row, plaintext = await service.issue_key(
        session, tenant_id=caller.tenant_id, laundry_id=laundry_id, name=body.name,
        created_by=caller.username, clock=runtime.clock,
    )  # fmt: skip
    return key_created(row, plaintext)


@router.post(
    "/{laundry_id}/keys/{key_id}/rotate",
    status_code=201,
    response_model=KeyCreated,
    responses=WRITE_ERRORS,
    summary="Rotate: revoke the key and issue its successor (shown once)",
)
async def rotate_key(
    laundry_id: IdPath, key_id: IdPath, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> KeyCreated:
    row, plaintext = await service.rotate_key(
        session, tenant_id=caller.tenant_id, laundry_id=laundry_id, key_id=key_id,
        created_by=caller.username, clock=runtime.clock,
    )  # fmt: skip
    return key_created(row, plaintext)


@router.delete(
    "/{laundry_id}/keys/{key_id}",
    response_model=KeyOut,
    responses=WRITE_ERRORS,
    summary="Revoke a key (the others keep working)",
)
async def revoke_key(
    laundry_id: IdPath, key_id: IdPath, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> KeyOut:
    row = await service.revoke_key(
        session, tenant_id=caller.tenant_id, laundry_id=laundry_id, key_id=key_id,
        clock=runtime.clock,
    )  # fmt: skip
    return key_out(row)


@router.get(
    "/{laundry_id}/price-lists",
    response_model=Page[PriceListOut],
    responses=READ_ERRORS,
    summary="List price lists, newest validity first",
)
async def list_price_lists(
    laundry_id: IdPath, caller: PortalCaller, session: Session, paging: Paging
) -> Page[PriceListOut]:
    rows, total = await service.list_price_lists(
        session, tenant_id=caller.tenant_id, laundry_id=laundry_id, paging=paging
    )
    return page([price_list_out(r) for r in rows], total, paging)


@router.post(
    "/{laundry_id}/price-lists",
    status_code=201,
    response_model=PriceListOut,
    responses=WRITE_ERRORS,
    summary="Create a price list (409 `overlapping_price_list` on overlapping validity)",
    description=(
        "The weight and estimate of the laundry's sheets not yet invoiced or cancelled follow "
        "in the same transaction."
    ),
)
async def create_price_list(
    laundry_id: IdPath,
    body: PriceListIn,
    caller: PortalAdmin,
    session: Session,
    runtime: RuntimeDep,
) -> PriceListOut:
    row = await service.create_price_list(
        session, tenant_id=caller.tenant_id, laundry_id=laundry_id, body=body, clock=runtime.clock
    )
    return price_list_out(row)


@router.get(
    "/{laundry_id}/price-lists/{price_list_id}",
    response_model=PriceListOut,
    responses=READ_ERRORS,
    summary="Get a price list",
)
async def get_price_list(
    laundry_id: IdPath, price_list_id: IdPath, caller: PortalCaller, session: Session
) -> PriceListOut:
    row = await service.get_price_list(
        session, tenant_id=caller.tenant_id, laundry_id=laundry_id, price_list_id=price_list_id
    )
    return price_list_out(row)


@router.put(
    "/{laundry_id}/price-lists/{price_list_id}",
    response_model=PriceListOut,
    responses=WRITE_ERRORS,
    summary="Replace a price list",
    description=(
        "The weight and estimate of the laundry's sheets not yet invoiced or cancelled follow "
        "in the same transaction."
    ),
)
async def replace_price_list(
    laundry_id: IdPath,
    price_list_id: IdPath,
    body: PriceListIn,
    caller: PortalAdmin,
    session: Session,
    runtime: RuntimeDep,
) -> PriceListOut:
    row = await service.replace_price_list(
        session, tenant_id=caller.tenant_id, laundry_id=laundry_id, price_list_id=price_list_id,
        body=body, clock=runtime.clock,
    )  # fmt: skip
    return price_list_out(row)


@router.delete(
    "/{laundry_id}/price-lists/{price_list_id}",
    response_model=Ok,
    responses=WRITE_ERRORS,
    summary="Delete a price list",
    description=(
        "The weight and estimate of the laundry's sheets not yet invoiced or cancelled follow "
        "in the same transaction."
    ),
)
async def delete_price_list(
    laundry_id: IdPath,
    price_list_id: IdPath,
    caller: PortalAdmin,
    session: Session,
    runtime: RuntimeDep,
) -> Ok:
    await service.delete_price_list(
        session, tenant_id=caller.tenant_id, laundry_id=laundry_id, price_list_id=price_list_id,
        clock=runtime.clock,
    )  # fmt: skip
    return Ok()
