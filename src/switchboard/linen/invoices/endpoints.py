"""Invoices: read by every role; approved, disputed and paid by admins; PDF download."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import Field, ValidationError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import FormData, UploadFile
from starlette.responses import Response

from switchboard.kit.errors import BadRequest, PayloadTooLarge
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import Page
from switchboard.linen.common import (
    ID_MAX,
    READ_ERRORS,
    WRITE_ERRORS,
    DateFrom,
    DateTo,
    IdPath,
    error_responses,
    page,
    sort_param,
    status_param,
)
from switchboard.linen.deps import PortalAdmin, PortalCaller
from switchboard.linen.invoices import service
from switchboard.linen.invoices.models import Invoice
from switchboard.linen.invoices.repository import SORTS, InvoiceFilter
from switchboard.linen.invoices.schemas import (
    DisputeIn,
    InvoiceMeta,
    InvoiceOut,
    PayIn,
    invoice_out,
)
from switchboard.linen.laundries import service as laundries
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/v1/invoices", tags=["invoices"])

UPLOAD_OVERHEAD = 256 * 1024
UPLOAD_LIMIT = service.MAX_PDF_BYTES + UPLOAD_OVERHEAD  # the PDF and its multipart framing
UPLOAD_ERRORS = error_responses(400, 401, 403, 404, 409, 413, 415)


class AdminInvoiceMeta(InvoiceMeta):
    laundry_id: int = Field(ge=1, le=ID_MAX, description="The laundry that issued the invoice")


def upload_body(meta_schema: type[InvoiceMeta]) -> dict[str, Any]:
    """OpenAPI of the multipart upload: the PDF and its JSON metadata."""
    return {
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["file", "metadata"],
                        "properties": {
                            "file": {
                                "type": "string",
                                "format": "binary",
                                "contentMediaType": "application/pdf",
                                "description": f"The invoice PDF, at most "
                                f"{service.MAX_PDF_BYTES // (1024 * 1024)} MiB",
                            },
                            "metadata": {
                                "type": "string",
                                "contentMediaType": "application/json",
                                "description": f"JSON: {meta_schema.__name__}",
                            },
                        },
                    },
                    "encoding": {"metadata": {"contentType": "application/json"}},
                }
            },
        }
    }


async def pdf_part(form: FormData) -> tuple[bytes, str | None]:
    """The form's ``file`` part, at most ``MAX_PDF_BYTES`` (413 above), and its file name."""
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise BadRequest("file: the PDF part is missing")
    content = await upload.read(service.MAX_PDF_BYTES + 1)
    if len(content) > service.MAX_PDF_BYTES:
        raise PayloadTooLarge(f"the PDF is larger than {service.MAX_PDF_BYTES} bytes")
    return content, upload.filename


async def read_upload(
    request: Request, meta_schema: type[InvoiceMeta]
) -> tuple[InvoiceMeta, bytes, str | None]:
    """The PDF and metadata of a multipart upload; size and type checked before storing."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > service.MAX_PDF_BYTES + UPLOAD_OVERHEAD:
        raise PayloadTooLarge(f"the upload is larger than {service.MAX_PDF_BYTES} bytes")
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise service.UnsupportedMediaType("send multipart/form-data with `file` and `metadata`")
    try:
        form = await request.form(max_files=1, max_fields=2, max_part_size=1024 * 1024)
    except Exception as exc:  # starlette reports malformed multipart in several ways
        raise BadRequest(f"body: the multipart body cannot be read: {exc}") from None
    try:
        metadata = form.get("metadata")
        if not isinstance(metadata, str):
            raise BadRequest("metadata: the JSON part is missing")
        content, filename = await pdf_part(form)
    finally:
        await form.close()
    try:
        meta = meta_schema.model_validate_json(metadata)
    except ValidationError as exc:
        from switchboard.kit.http import describe_validation

        raise BadRequest(f"metadata: {describe_validation(exc.errors())}") from None
    return meta, content, filename


async def invoices_out(
    session: AsyncSession, tenant_id: IdPath, rows: list[Invoice]
) -> list[InvoiceOut]:
    lines = await service.lines_of(session, tenant_id=tenant_id, invoice_ids=[r.id for r in rows])
    return [invoice_out(r, list(lines.get(r.id, []))) for r in rows]


async def one_out(session: AsyncSession, invoice: Invoice) -> InvoiceOut:
    return (await invoices_out(session, invoice.tenant_id, [invoice]))[0]


def pdf_response(invoice: Invoice, content: bytes) -> Response:
    return Response(
        content,
        media_type="application/pdf",
        headers={
            "Content-Disposition": f'attachment; filename="{invoice.pdf_filename}"',
            "X-Content-Type-Options": "nosniff",
        },
    )


@router.get(
    "",
    response_model=Page[InvoiceOut],
    responses=READ_ERRORS,
    summary="List invoices",
    description=(
        "Filters: `laundryId`, `propertyId` (has a line for it), `groupId` (has a line for one of "
        "its properties), `status` (comma-separated), "
        "`from`/`to` (invoice date, inclusive). Sort keys: `id`, `invoiceDate` (default "
        "`-invoiceDate`), `invoiceNumber`, `gross`, `status`, `receivedAt`."
    ),
)
async def list_invoices(
    caller: PortalCaller,
    session: Session,
    paging: Paging,
    laundry_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="laundryId")] = None,
    property_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="propertyId")] = None,
    group_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="groupId")] = None,
    status: Annotated[str | None, status_param(service.STATUSES)] = None,
    date_from: DateFrom = None,
    date_to: DateTo = None,
    sort: Annotated[str | None, sort_param(SORTS)] = None,
) -> Page[InvoiceOut]:
    where = InvoiceFilter(
        laundry_id=laundry_id,
        property_id=property_id,
        group_id=group_id,
        statuses=service.parse_statuses(status),
        date_from=date_from,
        date_to=date_to,
    )
    rows, total = await service.list_invoices(
        session, tenant_id=caller.tenant_id, where=where, paging=paging, sort=sort
    )
    return page(await invoices_out(session, caller.tenant_id, rows), total, paging)


@router.post(
    "",
    status_code=201,
    response_model=InvoiceOut,
    responses=UPLOAD_ERRORS,
    summary="Record an invoice received outside the Laundry API (multipart PDF + metadata)",
    openapi_extra=upload_body(AdminInvoiceMeta),
)
async def upload_invoice(
    request: Request, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> InvoiceOut:
    meta, content, filename = await read_upload(request, AdminInvoiceMeta)
    assert isinstance(meta, AdminInvoiceMeta)
    await laundries.require_reference(
        session, tenant_id=caller.tenant_id, laundry_id=meta.laundry_id, field="laundryId"
    )
    invoice = await service.receive(
        session, tenant_id=caller.tenant_id, laundry_id=meta.laundry_id, meta=meta, pdf=content,
        filename=filename, source=service.ADMIN, clock=runtime.clock,
    )  # fmt: skip
    return await one_out(session, invoice)


@router.get("/{invoice_id}", response_model=InvoiceOut, responses=READ_ERRORS, summary="Get")
async def get_invoice(invoice_id: IdPath, caller: PortalCaller, session: Session) -> InvoiceOut:
    invoice = await service.get(session, tenant_id=caller.tenant_id, invoice_id=invoice_id)
    return await one_out(session, invoice)


@router.get(
    "/{invoice_id}/pdf",
    response_class=Response,
    responses={
        200: {"content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}}},
        **READ_ERRORS,
    },
    summary="Download the invoice PDF",
)
async def download_pdf(invoice_id: IdPath, caller: PortalCaller, session: Session) -> Response:
    invoice, content = await service.pdf_of(
        session, tenant_id=caller.tenant_id, invoice_id=invoice_id
    )
    return pdf_response(invoice, content)


@router.post(
    "/{invoice_id}/approve",
    response_model=InvoiceOut,
    responses=WRITE_ERRORS,
    summary="received or disputed -> approved",
)
async def approve_invoice(
    invoice_id: IdPath, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> InvoiceOut:
    invoice = await service.approve(
        session, tenant_id=caller.tenant_id, invoice_id=invoice_id, actor=caller.username,
        clock=runtime.clock,
    )  # fmt: skip
    return await one_out(session, invoice)


@router.post(
    "/{invoice_id}/dispute",
    response_model=InvoiceOut,
    responses=WRITE_ERRORS,
    summary="received or approved -> disputed (with a reason)",
)
async def dispute_invoice(
    invoice_id: IdPath, body: DisputeIn, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> InvoiceOut:
    invoice = await service.dispute(
        session, tenant_id=caller.tenant_id, invoice_id=invoice_id, reason=body.reason,
        clock=runtime.clock,
    )  # fmt: skip
    return await one_out(session, invoice)


@router.post(
    "/{invoice_id}/pay",
    response_model=InvoiceOut,
    responses=WRITE_ERRORS,
    summary="approved -> paid",
)
async def pay_invoice(
    invoice_id: IdPath,
    caller: PortalAdmin,
    session: Session,
    runtime: RuntimeDep,
    body: PayIn | None = None,
) -> InvoiceOut:
    invoice = await service.mark_paid(
        session, tenant_id=caller.tenant_id, invoice_id=invoice_id,
        payment_ref=body.payment_ref if body else "", clock=runtime.clock,
    )  # fmt: skip
    return await one_out(session, invoice)
