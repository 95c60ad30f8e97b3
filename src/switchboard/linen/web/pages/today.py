"""Today and the days ahead: sheets by service date and laundry; the day's packing list."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from switchboard.linen.common import FIRST_DAY, LAST_DAY
from switchboard.linen.item_types import service as item_types
from switchboard.linen.properties.models import Property
from switchboard.linen.sheets import service as sheets
from switchboard.linen.sheets.models import LinenSheet
from switchboard.linen.sheets.repository import SheetFilter
from switchboard.linen.web import pdf
from switchboard.linen.web.deps import LINEN, ViewerDep, parse_day, render
from switchboard.linen.web.forms import see
from switchboard.linen.web.pages._shared import expand_sets, names_for, sheets_where
from switchboard.runtime import RuntimeDep, Session

router = APIRouter()
AHEAD_DAYS = 7
PACKED = ("confirmed", "delivered", "invoiced")


@dataclass(frozen=True, slots=True)
class Packing:
    """One property's share of a day's packing list."""

    sheet: LinenSheet
    property: Property
    laundry: str
    items: list[tuple[str, int]]


async def packing_list(session: AsyncSession, tenant_id: int, day: dt.date) -> list[Packing]:
    """The confirmed (or later) sheets of ``day``, their items with set components expanded."""
    where = SheetFilter(statuses=PACKED, date_from=day, date_to=day)
    rows = await sheets_where(session, tenant_id, where)
    names = await names_for(session, tenant_id, rows)
    lines = await sheets.lines_of(session, tenant_id=tenant_id, sheet_ids=[r.id for r in rows])
    kinds = await item_types.with_components(session, tenant_id=tenant_id, ids=names.kinds)
    out = []
    for row in rows:
        expanded = expand_sets(lines.get(row.id, []), kinds)
        items = sorted((kinds[i].name, qty) for i, qty in expanded.items() if qty > 0)
        laundry = names.laundries[row.laundry_id].name
        out.append(Packing(row, names.properties[row.property_id], laundry, items))
    return out


@router.get("/", include_in_schema=False)
async def home() -> Response:
    return see(LINEN.landing)


@router.get("/today")
async def today_page(
    request: Request, viewer: ViewerDep, session: Session, runtime: RuntimeDep, date: str = ""
) -> Response:
    day = parse_day(date, runtime.clock.now().date(), service_day=True)
    last = day + dt.timedelta(days=AHEAD_DAYS - 1)
    rows = await sheets_where(session, viewer.tenant.id, SheetFilter(date_from=day, date_to=last))
    names = await names_for(session, viewer.tenant.id, rows)
    days: dict[dt.date, dict[str, list[LinenSheet]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        days[row.service_date][names.laundries[row.laundry_id].name].append(row)
    return render(
        request, "today.html", viewer, day=day, last=last, days=days, names=names,
        packing=await packing_list(session, viewer.tenant.id, day),
        # no link to a day the page refuses (decision 0520)
        previous=day - dt.timedelta(days=1) if day > FIRST_DAY else None,
        following=day + dt.timedelta(days=1) if day < LAST_DAY else None,
        first=FIRST_DAY, final=LAST_DAY,
    )  # fmt: skip


@router.get("/today/packing.pdf")
async def packing_pdf(
    viewer: ViewerDep, session: Session, runtime: RuntimeDep, date: str = ""
) -> Response:
    day = parse_day(date, runtime.clock.now().date(), service_day=True)
    sections = [
        (
            f"{p.property.code} {p.property.name} ({p.sheet.number})",
            [("Laundry", p.laundry), ("Delivery note", p.property.delivery_note or "-")],
            [pdf.Row(name, [qty]) for name, qty in p.items],
        )
        for p in await packing_list(session, viewer.tenant.id, day)
    ]
    body = pdf.packing_list(day=day, sections=sections)
    disposition = f'inline; filename="packing-{day.isoformat()}.pdf"'
    return Response(
        body, media_type="application/pdf", headers={"content-disposition": disposition}
    )
