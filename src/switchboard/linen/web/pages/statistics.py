"""Statistics: volumes and costs per month, property, laundry or group as SVG charts; CSV."""

from __future__ import annotations

import csv
import io

from fastapi import APIRouter, Request
from starlette.responses import Response

from switchboard.kit.errors import BadRequest
from switchboard.linen.common import Money, check_range
from switchboard.linen.statistics import service
from switchboard.linen.statistics.repository import StatsQuery
from switchboard.linen.statistics.schemas import StatisticsRow
from switchboard.linen.web.charts import bar_chart
from switchboard.linen.web.deps import Viewer, ViewerDep, money, parse_day, render
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/statistics")
GROUPINGS = ("month", "property", "laundry", "group")


async def _rows(
    viewer: Viewer, session: Session, runtime: RuntimeDep, by: str, start: str, end: str
) -> tuple[StatsQuery, list[StatisticsRow]]:
    if by not in GROUPINGS:
        raise BadRequest(f"groupBy: one of {', '.join(GROUPINGS)}")
    first, last = service.default_range(runtime.clock)
    query = StatsQuery(
        tenant_id=viewer.tenant.id, group_by=by, date_from=parse_day(start, first),
        date_to=parse_day(end, last),
    )  # fmt: skip
    check_range(query.date_from, query.date_to)
    return query, await service.statistics(session, query)


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
    request: Request,
    viewer: ViewerDep,
    session: Session,
    runtime: RuntimeDep,
    groupBy: str = "month",  # noqa: N803 - the Data API's parameter name
    start: str = "",
    end: str = "",
) -> Response:
    query, rows = await _rows(viewer, session, runtime, groupBy, start, end)
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
    return render(
        request, "statistics.html", viewer, query=query, rows=rows, charts=charts,
        groupings=GROUPINGS, items_of=items_of, cost_of=cost_of,
    )  # fmt: skip


@router.get(".csv")
async def statistics_csv(
    viewer: ViewerDep,
    session: Session,
    runtime: RuntimeDep,
    groupBy: str = "month",  # noqa: N803
    start: str = "",
    end: str = "",
) -> Response:
    query, rows = await _rows(viewer, session, runtime, groupBy, start, end)
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
