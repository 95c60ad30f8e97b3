"""Linen sheets: read by every role; created, edited (drafts) and moved along by admins."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import parse_iso_utc
from switchboard.kit.errors import BadRequest
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import Ok, Page
from switchboard.linen.common import (
    ID_MAX,
    READ_ERRORS,
    WRITE_ERRORS,
    DateFrom,
    DateTo,
    Day,
    IdPath,
    check_range,
    page,
    sort_param,
    status_param,
)
from switchboard.linen.deps import PortalAdmin, PortalCaller
from switchboard.linen.sheets import service
from switchboard.linen.sheets.models import LinenSheet
from switchboard.linen.sheets.repository import SORTS, SheetFilter
from switchboard.linen.sheets.schemas import (
    BalanceItem,
    CancelIn,
    DeliveryReport,
    PropertyBalance,
    SheetCreate,
    SheetOut,
    SheetUpdate,
    sheet_out,
)
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/v1/sheets", tags=["linen sheets"])
# A property's balance sums its sheets: it is served here, listed with the property's routes.
balance_router = APIRouter(prefix="/v1/properties", tags=["properties"])

StatusQuery = Annotated[str | None, status_param(service.STATUSES)]
UpdatedSince = Query(
    alias="updatedSince",
    max_length=40,
    description="Only sheets changed at or after this RFC 3339 date-time",
    json_schema_extra={"format": "date-time"},
)


async def sheets_out(
    session: AsyncSession, tenant_id: IdPath, rows: list[LinenSheet]
) -> list[SheetOut]:
    lines = await service.lines_of(session, tenant_id=tenant_id, sheet_ids=[r.id for r in rows])
    return [sheet_out(r, list(lines.get(r.id, []))) for r in rows]


async def one_out(session: AsyncSession, sheet: LinenSheet) -> SheetOut:
    return (await sheets_out(session, sheet.tenant_id, [sheet]))[0]


@router.get(
    "",
    response_model=Page[SheetOut],
    responses=READ_ERRORS,
    summary="List linen sheets",
    description=(
        "Filters: `propertyId`, `groupId`, `laundryId`, `status` (comma-separated), `from`/`to` "
        "(service date, inclusive), `updatedSince` (ISO 8601). Sort keys: `id`, `number`, "
        "`serviceDate`, `status`, `createdAt`, `updatedAt`; default `-serviceDate`."
    ),
)
async def list_sheets(
    caller: PortalCaller,
    session: Session,
    paging: Paging,
    property_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="propertyId")] = None,
    group_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="groupId")] = None,
    laundry_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="laundryId")] = None,
    status: StatusQuery = None,
    date_from: DateFrom = None,
    date_to: DateTo = None,
    updated_since: Annotated[str | None, UpdatedSince] = None,
    sort: Annotated[str | None, sort_param(SORTS)] = None,
) -> Page[SheetOut]:
    check_range(date_from, date_to)
    where = SheetFilter(
        property_id=property_id,
        group_id=group_id,
        laundry_id=laundry_id,
        statuses=service.parse_statuses(status),
        date_from=date_from,
        date_to=date_to,
        updated_since=parse_since(updated_since),
    )
    rows, total = await service.list_sheets(
        session, tenant_id=caller.tenant_id, where=where, paging=paging, sort=sort
    )
    return page(await sheets_out(session, caller.tenant_id, rows), total, paging)


def parse_since(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        return parse_iso_utc(value)
    except ValueError:
        raise BadRequest("updatedSince: not an ISO 8601 date-time") from None


@router.post(
    "",
    status_code=201,
    response_model=SheetOut,
    responses=WRITE_ERRORS,
    summary="Create a draft sheet (numbered LS-<year>-<seq>)",
)
async def create_sheet(
    body: SheetCreate, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> SheetOut:
    sheet = await service.create(
        session, tenant_id=caller.tenant_id, body=body, actor=caller.username, clock=runtime.clock
    )
    return await one_out(session, sheet)


@router.get("/{sheet_id}", response_model=SheetOut, responses=READ_ERRORS, summary="Get")
async def get_sheet(sheet_id: IdPath, caller: PortalCaller, session: Session) -> SheetOut:
    sheet = await service.get(session, tenant_id=caller.tenant_id, sheet_id=sheet_id)
    return await one_out(session, sheet)


@router.patch(
    "/{sheet_id}",
    response_model=SheetOut,
    responses=WRITE_ERRORS,
    summary="Edit a draft (409 `not_editable` once confirmed)",
)
async def update_sheet(
    sheet_id: IdPath, body: SheetUpdate, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> SheetOut:
    sheet = await service.update(
        session, tenant_id=caller.tenant_id, sheet_id=sheet_id, body=body, clock=runtime.clock
    )
    return await one_out(session, sheet)


@router.delete(
    "/{sheet_id}",
    response_model=Ok,
    responses=WRITE_ERRORS,
    summary="Delete a draft (others are cancelled instead)",
)
async def delete_sheet(sheet_id: IdPath, caller: PortalAdmin, session: Session) -> Ok:
    await service.delete(session, tenant_id=caller.tenant_id, sheet_id=sheet_id)
    return Ok()


@router.post(
    "/{sheet_id}/confirm",
    response_model=SheetOut,
    responses=WRITE_ERRORS,
    summary="draft -> confirmed; the laundry sees it from now on",
    description=(
        "409 `empty` without an ordered item; 409 `inactive` when the sheet's property, its "
        "laundry, one of its item types or a component of a set on it was deactivated since "
        "the draft was written."
    ),
)
async def confirm_sheet(
    sheet_id: IdPath, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> SheetOut:
    sheet = await service.confirm(
        session, tenant_id=caller.tenant_id, sheet_id=sheet_id, actor=caller.username,
        clock=runtime.clock,
    )  # fmt: skip
    return await one_out(session, sheet)


@router.post(
    "/{sheet_id}/cancel",
    response_model=SheetOut,
    responses=WRITE_ERRORS,
    summary="draft or confirmed -> cancelled",
)
async def cancel_sheet(
    sheet_id: IdPath,
    caller: PortalAdmin,
    session: Session,
    runtime: RuntimeDep,
    body: CancelIn | None = None,
) -> SheetOut:
    sheet = await service.cancel(
        session, tenant_id=caller.tenant_id, sheet_id=sheet_id,
        reason=body.reason if body else "", actor=caller.username, clock=runtime.clock,
    )  # fmt: skip
    return await one_out(session, sheet)


@router.post(
    "/{sheet_id}/delivery",
    response_model=SheetOut,
    responses=WRITE_ERRORS,
    summary="Record delivered/collected/rejected counts: confirmed -> delivered",
)
async def report_delivery(
    sheet_id: IdPath,
    body: DeliveryReport,
    caller: PortalAdmin,
    session: Session,
    runtime: RuntimeDep,
) -> SheetOut:
    sheet = await service.report_delivery(
        session, tenant_id=caller.tenant_id, sheet_id=sheet_id, body=body, actor=caller.username,
        clock=runtime.clock,
    )  # fmt: skip
    return await one_out(session, sheet)


@balance_router.get(
    "/{property_id}/balance",
    response_model=PropertyBalance,
    responses=READ_ERRORS,
    summary="A property's running linen balance with its laundries",
    description=(
        "Per item type, over the property's delivered and invoiced sheets (service date up to "
        "`until`, inclusive, when given): ordered, accepted (delivered minus rejected) and the "
        "balance still owed, which carries to the next delivery. Negative: delivered ahead."
    ),
)
async def property_balance(
    property_id: IdPath,
    caller: PortalCaller,
    session: Session,
    until: Annotated[Day | None, Query()] = None,
) -> PropertyBalance:
    rows = await service.running_balance(
        session, tenant_id=caller.tenant_id, property_id=property_id, until=until
    )
    items = [
        BalanceItem(
            item_type_id=kind.id,
            code=kind.code,
            ordered=ordered,
            accepted=accepted,
            balance=ordered - accepted,
        )
        for kind, ordered, accepted in rows
    ]
    return PropertyBalance(property_id=property_id, until=until, items=items)
