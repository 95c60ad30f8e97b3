"""Statistics over linen sheets, for every role."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from switchboard.kit.paging import Paging
from switchboard.linen.common import ID_MAX, READ_ERRORS, DateFrom, DateTo
from switchboard.linen.deps import PortalCaller
from switchboard.linen.statistics import service
from switchboard.linen.statistics.repository import StatsQuery
from switchboard.linen.statistics.schemas import GroupBy, StatisticsPage
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/v1/statistics", tags=["statistics"])


@router.get(
    "",
    response_model=StatisticsPage,
    responses=READ_ERRORS,
    summary="Volumes and costs per month, property, laundry or group",
    description=(
        "Counts confirmed, delivered and invoiced sheets whose service date is within "
        "`from`..`to` (inclusive; default: the last twelve calendar months). Items count the "
        "delivered quantities once delivered, the ordered ones before. Costs are listed per "
        "currency. With `groupBy=group` a property in two groups counts in both. Rows are "
        "ordered by month, or by label."
    ),
)
async def get_statistics(
    caller: PortalCaller,
    session: Session,
    runtime: RuntimeDep,
    paging: Paging,
    group_by: Annotated[GroupBy, Query(alias="groupBy")] = "month",
    date_from: DateFrom = None,
    date_to: DateTo = None,
    property_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="propertyId")] = None,
    laundry_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="laundryId")] = None,
    group_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="groupId")] = None,
) -> StatisticsPage:
    start, end = service.default_range(runtime.clock)
    query = StatsQuery(
        tenant_id=caller.tenant_id,
        group_by=group_by,
        date_from=date_from or start,
        date_to=date_to or end,
        property_id=property_id,
        laundry_id=laundry_id,
        group_id=group_id,
    )
    rows = await service.statistics(session, query)
    window = rows[paging.offset : paging.offset + paging.limit]
    return StatisticsPage(
        data=window,
        **paging.envelope(len(rows)),
        group_by=group_by,
        date_from=query.date_from,
        date_to=query.date_to,
    )
