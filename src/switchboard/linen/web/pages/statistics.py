"""Statistics: volumes and costs per month, property, laundry or group as SVG charts; CSV.
Both take the Data API's filters: a date range and one property, laundry or group."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from switchboard.kit.errors import BadRequest
from switchboard.linen.common import Money, check_range
from switchboard.linen.statistics import service
from switchboard.linen.statistics.repository import StatsQuery
from switchboard.linen.statistics.schemas import StatisticsRow
from switchboard.linen.web.charts import bar_chart
from switchboard.linen.web.deps import ViewerDep, money, parse_day, render
from switchboard.linen.web.pages._shared import all_groups, all_laundries, all_properties
from switchboard.runtime import RuntimeDep, Session
from switchboard.web.pages import form_int

router = APIRouter(prefix="/statistics")
GROUPINGS = ("month", "property", "laundry", "group")


@dataclass(frozen=True, slots=True)
class Filters:
    """The page's query, as the Data API names it (blank fields: the defaults)."""

    groupBy: str = "month"  # noqa: N815 - the Data API's parameter names
    start: str = ""
    end: str = ""
    propertyId: str = ""  # noqa: N815
    laundryId: str = ""  # noqa: N815
    groupId: str = ""  # noqa: N815


FiltersDep = Annotated[Filters, Depends()]


async def _rows(
    viewer: ViewerDep, session: Session, runtime: RuntimeDep, filters: FiltersDep
) -> tuple[StatsQuery, list[StatisticsRow]]:
    if filters.groupBy not in GROUPINGS:
        raise BadRequest(f"groupBy: one of {', '.join(GROUPINGS)}")
    first, last = service.default_range(runtime.clock)
    query = StatsQuery(
        tenant_id=viewer.tenant.id, group_by=filters.groupBy,
        date_from=parse_day(filters.start, first), date_to=parse_day(filters.end, last),
        property_id=form_int(filters.propertyId, "propertyId"),
        laundry_id=form_int(filters.laundryId, "laundryId"),
        group_id=form_int(filters.groupId, "groupId"),
    )  # fmt: skip
    check_range(query.date_from, query.date_to, ("start", "end"))
    return query, await service.statistics(session, query)


Rows = Annotated[tuple[StatsQuery, list[StatisticsRow]], Depends(_rows)]


async def _choices(session: AsyncSession, tenant_id: int) -> dict[str, Any]:
    """What the filters offer: every property, laundry and group of the tenant."""
    props = await all_properties(session, tenant_id)
    found = await all_laundries(session, tenant_id)
    group_rows = await all_groups(session, tenant_id)
    return {"properties": props, "laundries": found, "groups": group_rows}


def items_of(row: StatisticsRow) -> int:
    return sum(item.qty for item in row.items_by_type)


def total(row: StatisticsRow, field: str) -> float:
    """A cost column summed over its currencies, in major units (for the bar length only)."""
    amounts: list[Money] = getattr(row, field)
    return sum(m.amount for m in amounts) / 100


def cost_of(row: StatisticsRow, field: str) -> str:
    return ", ".join(money(m.amount, m.currency) for m in getattr(row, field))


@router.get("")
async def statistics_page(
    request: Request, viewer: ViewerDep, session: Session, rows_of: Rows
) -> Response:
    query, rows = rows_of
    named = [(row.label or row.period or row.key, row) for row in rows]
    charts = [
        bar_chart("Items", [(n, items_of(r), str(items_of(r))) for n, r in named]),
        bar_chart(
            "Estimated cost",
            [(n, total(r, "estimated_cost"), cost_of(r, "estimated_cost")) for n, r in named],
        ),
        bar_chart(
            "Invoiced cost",
            [(n, total(r, "invoiced_cost"), cost_of(r, "invoiced_cost")) for n, r in named],
        ),
    ]
    csv_query = {
        "groupBy": query.group_by, "start": query.date_from.isoformat(),
        "end": query.date_to.isoformat(), "propertyId": query.property_id or "",
        "laundryId": query.laundry_id or "", "groupId": query.group_id or "",
    }  # fmt: skip
    return render(
        request, "statistics.html", viewer, query=query, rows=rows, charts=charts,
        groupings=GROUPINGS, items_of=items_of, cost_of=cost_of,
        csv_url="/app/statistics.csv?" + urlencode(csv_query),
        **await _choices(session, viewer.tenant.id),
    )  # fmt: skip


@router.get(".csv")
async def statistics_csv(rows_of: Rows) -> Response:
    query, rows = rows_of
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["period", "key", "label", "sheets", "items", "weightKg", "estimatedCost",
                     "invoicedCost"])  # fmt: skip
    for row in rows:
        costs = [cost_of(row, "estimated_cost"), cost_of(row, "invoiced_cost")]
        writer.writerow(
            [row.period, row.key, row.label, row.sheets, items_of(row), row.weight_kg, *costs]
        )
    name = f"statistics-{query.group_by}-{query.date_from}-{query.date_to}.csv"
    return Response(
        out.getvalue(), media_type="text/csv; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{name}"'},
    )  # fmt: skip
