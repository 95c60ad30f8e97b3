"""Invoices: list, the PDF (view or download), approve, dispute with a reason, pay; and the
reconciliation of delivered sheets against invoice lines."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from switchboard.linen.common import IdPath
from switchboard.linen.invoices import service
from switchboard.linen.invoices.repository import InvoiceFilter
from switchboard.linen.laundries import service as laundries
from switchboard.linen.sheets.repository import SheetFilter
from switchboard.linen.web.deps import ViewerDep, Writer, render
from switchboard.linen.web.pages._shared import ALL, names_for, sheets_where
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/invoices")


@router.get("")
async def list_page(request: Request, viewer: ViewerDep, session: Session) -> Response:
    tenant_id = viewer.tenant.id
    rows, _ = await service.list_invoices(
        session, tenant_id=tenant_id, where=InvoiceFilter(), paging=ALL, sort="-invoiceDate"
    )
    lines = await service.lines_of(session, tenant_id=tenant_id, invoice_ids=[r.id for r in rows])
    unmatched = [
        (invoice, line)
        for invoice in rows
        for line in lines.get(invoice.id, [])
        if line.linen_sheet_id is None
    ]
    waiting = await sheets_where(session, tenant_id, SheetFilter(statuses=("delivered",)))
    names = await names_for(session, tenant_id, waiting)
    found = await laundries.many(session, tenant_id=tenant_id, ids=[r.laundry_id for r in rows])
    return render(
        request, "invoices.html", viewer, invoices=rows, laundries=found, unmatched=unmatched,
        waiting=waiting, names=names,
    )  # fmt: skip


@router.get("/{invoice_id}")
async def detail_page(
    request: Request, invoice_id: IdPath, viewer: ViewerDep, session: Session
) -> Response:
    tenant_id = viewer.tenant.id
    invoice = await service.get(session, tenant_id=tenant_id, invoice_id=invoice_id)
    lines = (await service.lines_of(session, tenant_id=tenant_id, invoice_ids=[invoice.id])).get(
        invoice.id, []
    )
    laundry = await laundries.get(session, tenant_id=tenant_id, laundry_id=invoice.laundry_id)
    return render(request, "invoice.html", viewer, invoice=invoice, lines=lines, laundry=laundry)


@router.get("/{invoice_id}/pdf")
async def invoice_pdf(
    invoice_id: IdPath, viewer: ViewerDep, session: Session, download: str = ""
) -> Response:
    invoice, content = await service.pdf_of(
        session, tenant_id=viewer.tenant.id, invoice_id=invoice_id
    )
    kind = "attachment" if download == "1" else "inline"
    disposition = f'{kind}; filename="{service.safe_filename(invoice.pdf_filename)}"'
    return Response(
        content, media_type="application/pdf", headers={"content-disposition": disposition}
    )


def _to(invoice_id: int) -> Response:
    return RedirectResponse(f"/app/invoices/{invoice_id}", status_code=303)


@router.post("/{invoice_id}/approve")
async def approve(
    invoice_id: IdPath, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    await service.approve(
        session, tenant_id=viewer.tenant.id, invoice_id=invoice_id, actor=viewer.user.username,
        clock=runtime.clock,
    )  # fmt: skip
    return _to(invoice_id)


@router.post("/{invoice_id}/dispute")
async def dispute(
    invoice_id: IdPath,
    viewer: Writer,
    session: Session,
    runtime: RuntimeDep,
    reason: Annotated[str, Form(min_length=1, max_length=2000)],
) -> Response:
    await service.dispute(
        session, tenant_id=viewer.tenant.id, invoice_id=invoice_id, reason=reason,
        clock=runtime.clock,
    )  # fmt: skip
    return _to(invoice_id)


@router.post("/{invoice_id}/pay")
async def pay(
    invoice_id: IdPath,
    viewer: Writer,
    session: Session,
    runtime: RuntimeDep,
    payment_ref: Annotated[str, Form(alias="paymentRef", max_length=128)] = "",
) -> Response:
    await service.mark_paid(
        session, tenant_id=viewer.tenant.id, invoice_id=invoice_id, payment_ref=payment_ref,
        clock=runtime.clock,
    )  # fmt: skip
    return _to(invoice_id)
