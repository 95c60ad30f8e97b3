"""Invoices: list, the PDF (view or download), approve, dispute with a reason, pay; an invoice
received outside the Laundry API recorded by hand (the Data API's multipart upload, ``source``
``admin``); and the reconciliation of delivered sheets against invoice lines."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from switchboard.kit.schemas import FORM
from switchboard.linen.common import IdPath
from switchboard.linen.invoices import service
from switchboard.linen.invoices.endpoints import AdminInvoiceMeta, pdf_part
from switchboard.linen.invoices.repository import InvoiceFilter
from switchboard.linen.laundries import service as laundries
from switchboard.linen.sheets.repository import SheetFilter
from switchboard.linen.web.deps import Editor, ViewerDep, Writer, render
from switchboard.linen.web.forms import form_date, form_grid, form_money, see
from switchboard.linen.web.pages._shared import ALL, all_laundries, names_for, sheets_where
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


@router.get("/new")
async def new_page(request: Request, viewer: Editor, session: Session) -> Response:
    """The upload form, listing the delivered sheets it may invoice (their laundry's only)."""
    tenant_id = viewer.tenant.id
    rows = await all_laundries(session, tenant_id)
    waiting = await sheets_where(session, tenant_id, SheetFilter(statuses=("delivered",)))
    names = await names_for(session, tenant_id, waiting)
    return render(
        request, "invoice_form.html", viewer, laundries=rows, waiting=waiting, names=names
    )


def _meta(form: Any) -> AdminInvoiceMeta:
    """The upload's metadata from the form: a line per sheet given an amount, and one more
    line without a sheet when it has a description or an amount."""
    lines: list[dict[str, Any]] = []
    for sheet_id, value in form_grid(form, "sheet_").items():
        amount = form_money(value, f"sheet_{sheet_id}")
        if amount is not None:
            ref = str(form.get(f"ref_{sheet_id}", ""))
            lines.append({"linenSheetId": sheet_id, "description": ref, "qty": 1,
                          "unitPrice": amount, "net": amount})  # fmt: skip
    extra = form_money(form.get("otherNet"), "otherNet")
    description = str(form.get("otherDescription", "")).strip()
    if extra is not None or description:
        lines.append({"description": description, "qty": 1, "unitPrice": extra or 0,
                      "net": extra or 0})  # fmt: skip
    net = form_money(form.get("net"), "net")
    tax = form_money(form.get("tax"), "tax")
    gross = form_money(form.get("gross"), "gross")
    if gross is None and net is not None and tax is not None:
        gross = net + tax
    body = {
        "laundryId": form.get("laundryId"),
        "invoiceNumber": str(form.get("invoiceNumber", "")),
        "invoiceDate": form_date(form.get("invoiceDate"), "invoiceDate"),
        "periodFrom": form_date(form.get("periodFrom"), "periodFrom"),
        "periodTo": form_date(form.get("periodTo"), "periodTo"),
        "currency": str(form.get("currency", "")).strip().upper(),
        "net": net,
        "tax": tax,
        "gross": gross,
        "lines": lines,
    }
    return AdminInvoiceMeta.model_validate(body, context=FORM)


@router.post("")
async def upload(
    request: Request, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    try:
        meta = _meta(form)
        content, filename = await pdf_part(form)
    finally:
        await form.close()
    tenant_id = viewer.tenant.id
    await laundries.require_reference(
        session, tenant_id=tenant_id, laundry_id=meta.laundry_id, field="laundryId"
    )
    invoice = await service.receive(
        session, tenant_id=tenant_id, laundry_id=meta.laundry_id, meta=meta, pdf=content,
        filename=filename, source=service.ADMIN, clock=runtime.clock,
    )  # fmt: skip
    return _to(invoice.id)


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
    return see(f"/app/invoices/{invoice_id}")


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
