"""Linen sheets: create from par, edit a draft's lines, confirm, cancel, re-issue, the counts the
laundry reported, and the printable control sheet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Form, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from switchboard.kit.schemas import FORM
from switchboard.linen.common import IdPath
from switchboard.linen.sheets import service
from switchboard.linen.sheets.models import LinenSheet, SheetLine
from switchboard.linen.sheets.schemas import LineIn, SheetCreate, SheetUpdate
from switchboard.linen.web import pdf
from switchboard.linen.web.deps import ViewerDep, Writer, render
from switchboard.linen.web.forms import quantities, see
from switchboard.linen.web.pages._shared import Names, all_item_types, names_for
from switchboard.runtime import RuntimeDep, Session
from switchboard.web.pages import form_int

router = APIRouter(prefix="/sheets")


def _to(sheet: LinenSheet) -> Response:
    return see(f"/app/sheets/{sheet.id}")


@dataclass(frozen=True, slots=True)
class SheetView:
    sheet: LinenSheet
    names: Names
    lines: list[SheetLine]


async def _view(session: AsyncSession, tenant_id: int, sheet_id: int) -> SheetView:
    sheet = await service.get(session, tenant_id=tenant_id, sheet_id=sheet_id)
    lines = await service.lines_of(session, tenant_id=tenant_id, sheet_ids=[sheet.id])
    names = await names_for(session, tenant_id, [sheet])
    return SheetView(sheet, names, lines.get(sheet.id, []))


@router.post("")
async def create_sheet(
    viewer: Writer,
    session: Session,
    runtime: RuntimeDep,
    property_id: Annotated[int, Form()],
    service_date: Annotated[str, Form()],
    reason: Annotated[str, Form()] = "turnover",
    laundry_id: Annotated[str, Form()] = "",
) -> Response:
    """A draft with one line per par level of the property, for the laundry chosen (blank:
    the property's default laundry)."""
    body = SheetCreate.model_validate(
        {"propertyId": property_id, "serviceDate": service_date, "reason": reason,
         "laundryId": form_int(laundry_id, "laundry_id")},
        context=FORM,
    )  # fmt: skip
    sheet = await service.create(
        session, tenant_id=viewer.tenant.id, body=body, actor=viewer.user.username,
        clock=runtime.clock,
    )  # fmt: skip
    return _to(sheet)


@router.get("/{sheet_id}")
async def sheet_page(
    request: Request, sheet_id: IdPath, viewer: ViewerDep, session: Session
) -> Response:
    view = await _view(session, viewer.tenant.id, sheet_id)
    kinds = await all_item_types(session, viewer.tenant.id)
    return render(
        request, "sheet.html", viewer, catalogue=kinds, sheet=view.sheet, names=view.names,
        lines=view.lines, balance_due=service.balance_due,
    )  # fmt: skip


@router.post("/{sheet_id}/lines")
async def edit_lines(
    request: Request, sheet_id: IdPath, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    """Every ``qty_<itemTypeId>`` field of the form; zero or blank drops the line."""
    lines = [
        LineIn(item_type_id=q["itemTypeId"], qty_ordered=q["qty"])
        for q in quantities(await request.form(), "qty_")
    ]
    sheet = await service.update(
        session, tenant_id=viewer.tenant.id, sheet_id=sheet_id, body=SheetUpdate(lines=lines),
        clock=runtime.clock,
    )  # fmt: skip
    return _to(sheet)


@router.post("/{sheet_id}/confirm")
async def confirm(
    sheet_id: IdPath, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    sheet = await service.confirm(
        session, tenant_id=viewer.tenant.id, sheet_id=sheet_id, actor=viewer.user.username,
        clock=runtime.clock,
    )  # fmt: skip
    return _to(sheet)


@router.post("/{sheet_id}/cancel")
async def cancel(
    sheet_id: IdPath,
    viewer: Writer,
    session: Session,
    runtime: RuntimeDep,
    reason: Annotated[str, Form(max_length=500)] = "",
) -> Response:
    sheet = await service.cancel(
        session, tenant_id=viewer.tenant.id, sheet_id=sheet_id, reason=reason,
        actor=viewer.user.username, clock=runtime.clock,
    )  # fmt: skip
    return _to(sheet)


@router.post("/{sheet_id}/reissue")
async def reissue(
    sheet_id: IdPath, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    """Cancel a confirmed sheet and open a draft copy of it, to be edited and confirmed."""
    tenant_id = viewer.tenant.id
    old = await service.get(session, tenant_id=tenant_id, sheet_id=sheet_id)
    lines = (await service.lines_of(session, tenant_id=tenant_id, sheet_ids=[old.id])).get(
        old.id, []
    )
    if old.status != "cancelled":
        await service.cancel(
            session, tenant_id=tenant_id, sheet_id=old.id, reason="re-issued",
            actor=viewer.user.username, clock=runtime.clock,
        )  # fmt: skip
    # The Data API's body, as a client would send it (dates as text: the schema takes no other)
    body = SheetCreate.model_validate(
        {
            "propertyId": old.property_id,
            "laundryId": old.laundry_id,
            "serviceDate": old.service_date.isoformat(),
            "pickupDate": old.pickup_date.isoformat() if old.pickup_date else None,
            "reason": old.reason,
            "bookingRef": old.booking_ref,
            "guestCount": old.guest_count,
            "notes": old.notes,
            "lines": [
                {"itemTypeId": x.item_type_id, "qtyOrdered": x.qty_ordered, "note": x.note}
                for x in lines
            ],
        }
    )
    sheet = await service.create(
        session, tenant_id=tenant_id, body=body, actor=viewer.user.username, clock=runtime.clock
    )
    return _to(sheet)


@router.get("/{sheet_id}/control.pdf")
async def control_pdf(sheet_id: IdPath, viewer: ViewerDep, session: Session) -> Response:
    view = await _view(session, viewer.tenant.id, sheet_id)
    sheet, names = view.sheet, view.names
    prop = names.properties[sheet.property_id]
    rows = [
        pdf.Row(
            names.kinds[line.item_type_id].name,
            [
                line.qty_ordered,
                line.qty_delivered,
                line.qty_collected,
                line.qty_rejected,
                service.balance_due(line),
            ],
        )
        for line in view.lines
    ]
    facts = [
        ("Property", f"{prop.code} {prop.name}"),
        ("Laundry", names.laundries[sheet.laundry_id].name),
        ("Service date", sheet.service_date.isoformat()),
        ("Status", sheet.status),
        ("Delivery note", prop.delivery_note or "-"),
    ]
    body = pdf.control_sheet(number=sheet.number, facts=facts, rows=rows)
    disposition = f'inline; filename="{sheet.number}.pdf"'
    return Response(
        body, media_type="application/pdf", headers={"content-disposition": disposition}
    )
