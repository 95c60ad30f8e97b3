"""The Laundry API (``/api/laundry``), authenticated with the laundry's own key."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from switchboard.kit.clock import iso_utc
from switchboard.kit.http import prefixed_ids
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import Page
from switchboard.linen.common import (
    DateFrom,
    DateTo,
    IdPath,
    check_range,
    error_responses,
    page,
    sort_param,
    status_param,
)
from switchboard.linen.invoices import service as invoices
from switchboard.linen.invoices.endpoints import (
    UPLOAD_ERRORS,
    invoices_out,
    pdf_response,
    read_upload,
    upload_body,
)
from switchboard.linen.invoices.repository import SORTS as INVOICE_SORTS
from switchboard.linen.invoices.repository import InvoiceFilter
from switchboard.linen.invoices.schemas import InvoiceMeta, InvoiceOut
from switchboard.linen.invoices.service import STATUSES as INVOICE_STATUSES
from switchboard.linen.item_types import service as item_types
from switchboard.linen.laundries.models import Laundry
from switchboard.linen.laundries.schemas import AddressOut
from switchboard.linen.laundry_api import service
from switchboard.linen.laundry_api.deps import CurrentLaundry
from switchboard.linen.laundry_api.schemas import JobOut, JobProperty, LaundryMe, job_item_type
from switchboard.linen.properties import service as properties
from switchboard.linen.sheets import service as sheets
from switchboard.linen.sheets.endpoints import UpdatedSince, parse_since
from switchboard.linen.sheets.models import LinenSheet
from switchboard.linen.sheets.repository import SORTS as SHEET_SORTS
from switchboard.linen.sheets.schemas import DeliveryReport, sheet_out
from switchboard.linen.sheets.service import STATUSES as SHEET_STATUSES
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(
    prefix="/laundry", tags=["laundry API"], generate_unique_id_function=prefixed_ids("laundry")
)
READ = error_responses(400, 401, 404)
WRITE = error_responses(400, 401, 404, 409)


async def jobs_out(session: AsyncSession, laundry: Laundry, rows: list[LinenSheet]) -> list[JobOut]:
    tenant_id = laundry.tenant_id
    lines = await sheets.lines_of(session, tenant_id=tenant_id, sheet_ids=[r.id for r in rows])
    props = await properties.many(session, tenant_id=tenant_id, ids=[r.property_id for r in rows])
    kinds = await item_types.with_components(
        session,
        tenant_id=tenant_id,
        ids={line.item_type_id for group in lines.values() for line in group},
    )
    result = []
    for row in rows:
        full = sheet_out(row, list(lines.get(row.id, [])))
        prop = props[row.property_id]
        used = sorted({line.item_type_id for line in lines.get(row.id, [])})
        result.append(
            JobOut(
                id=row.id,
                number=row.number,
                status=full.status,
                service_date=row.service_date,
                pickup_date=row.pickup_date,
                reason=row.reason,
                guest_count=row.guest_count,
                late_order=row.late_order,
                property=JobProperty(
                    id=prop.id,
                    code=prop.code,
                    name=prop.name,
                    address=AddressOut.model_validate(prop.address or {}),
                    timezone=prop.timezone,
                    delivery_note=prop.delivery_note,
                ),
                lines=full.lines,
                item_types=[job_item_type(kinds[i], kinds) for i in used],
                confirmed_at=iso_utc(row.confirmed_at),
                delivered_at=iso_utc(row.delivered_at),
                cancelled_at=iso_utc(row.cancelled_at),
                invoice_id=row.invoice_id,
                weight_kg=row.weight_grams / 1000,
                updated_at=iso_utc(row.updated_at) or "",
            )
        )
    return result


@router.get("/me", response_model=LaundryMe, responses=READ, summary="The laundry this key is for")
async def me(laundry: CurrentLaundry) -> LaundryMe:
    return LaundryMe(id=laundry.id, name=laundry.name)


@router.get(
    "/jobs",
    response_model=Page[JobOut],
    responses=READ,
    summary="List this laundry's jobs (sheets once confirmed, cancellations included)",
    description=(
        "Poll with `updatedSince` set to the largest `updatedAt` seen: the filter is inclusive, "
        "so a job may come twice but never goes missing. Filters: `status` (comma-separated), "
        "`from`/`to` (service date). Sort keys: `updatedAt` (default), `serviceDate`, `id`, "
        "`number`, `status`, `createdAt`."
    ),
)
async def list_jobs(
    laundry: CurrentLaundry,
    session: Session,
    paging: Paging,
    updated_since: Annotated[str | None, UpdatedSince] = None,
    status: Annotated[str | None, status_param(SHEET_STATUSES)] = None,
    date_from: DateFrom = None,
    date_to: DateTo = None,
    sort: Annotated[str | None, sort_param(SHEET_SORTS)] = None,
) -> Page[JobOut]:
    check_range(date_from, date_to)
    rows, total = await service.list_jobs(
        session, laundry=laundry, statuses=sheets.parse_statuses(status),
        updated_since=parse_since(updated_since), date_from=date_from, date_to=date_to,
        paging=paging, sort=sort,
    )  # fmt: skip
    return page(await jobs_out(session, laundry, rows), total, paging)


@router.get("/jobs/{job_id}", response_model=JobOut, responses=READ, summary="Get a job")
async def get_job(job_id: IdPath, laundry: CurrentLaundry, session: Session) -> JobOut:
    sheet = await service.get_job(session, laundry=laundry, job_id=job_id)
    return (await jobs_out(session, laundry, [sheet]))[0]


@router.post(
    "/jobs/{job_id}/delivery",
    response_model=JobOut,
    responses=WRITE,
    summary="Report delivered / collected / rejected counts: confirmed -> delivered",
    description="A report may be corrected by sending it again until the job is invoiced.",
)
async def report_delivery(
    job_id: IdPath,
    body: DeliveryReport,
    laundry: CurrentLaundry,
    session: Session,
    runtime: RuntimeDep,
) -> JobOut:
    sheet = await sheets.report_delivery(
        session, tenant_id=laundry.tenant_id, sheet_id=job_id, body=body,
        actor=f"laundry:{laundry.id}", clock=runtime.clock, laundry_id=laundry.id,
    )  # fmt: skip
    return (await jobs_out(session, laundry, [sheet]))[0]


@router.get(
    "/invoices",
    response_model=Page[InvoiceOut],
    responses=READ,
    summary="List this laundry's invoices",
    description="Filters: `status`, `from`/`to` (invoice date). Sort keys as in the Data API.",
)
async def list_invoices(
    laundry: CurrentLaundry,
    session: Session,
    paging: Paging,
    status: Annotated[str | None, status_param(INVOICE_STATUSES)] = None,
    date_from: DateFrom = None,
    date_to: DateTo = None,
    sort: Annotated[str | None, sort_param(INVOICE_SORTS)] = None,
) -> Page[InvoiceOut]:
    where = InvoiceFilter(
        laundry_id=laundry.id,
        statuses=invoices.parse_statuses(status),
        date_from=date_from,
        date_to=date_to,
    )
    rows, total = await invoices.list_invoices(
        session, tenant_id=laundry.tenant_id, where=where, paging=paging, sort=sort
    )
    return page(await invoices_out(session, laundry.tenant_id, rows), total, paging)


@router.post(
    "/invoices",
    status_code=201,
    response_model=InvoiceOut,
    responses={k: v for k, v in UPLOAD_ERRORS.items() if k != 403},
    summary="Upload an invoice: multipart `file` (PDF) and `metadata` (JSON)",
    description=(
        "The lines may name delivered jobs (`linenSheetId`); those move to `invoiced`. "
        "A duplicate `invoiceNumber` is 409 `duplicate_invoice`; a body that is not "
        "`multipart/form-data` is 415 `unsupported_media_type`, a file that is not a PDF 415 "
        "`not_a_pdf`; a file over the limit is 413."
    ),
    openapi_extra=upload_body(InvoiceMeta),
)
async def upload_invoice(
    request: Request, laundry: CurrentLaundry, session: Session, runtime: RuntimeDep
) -> InvoiceOut:
    meta, content, filename = await read_upload(request, InvoiceMeta)
    invoice = await invoices.receive(
        session, tenant_id=laundry.tenant_id, laundry_id=laundry.id, meta=meta, pdf=content,
        filename=filename, source=invoices.LAUNDRY_API, clock=runtime.clock,
    )  # fmt: skip
    return (await invoices_out(session, laundry.tenant_id, [invoice]))[0]


@router.get(
    "/invoices/{invoice_id}", response_model=InvoiceOut, responses=READ, summary="Get an invoice"
)
async def get_invoice(invoice_id: IdPath, laundry: CurrentLaundry, session: Session) -> InvoiceOut:
    invoice = await invoices.get(
        session, tenant_id=laundry.tenant_id, invoice_id=invoice_id, laundry_id=laundry.id
    )
    return (await invoices_out(session, laundry.tenant_id, [invoice]))[0]


@router.get(
    "/invoices/{invoice_id}/pdf",
    response_class=Response,
    responses={
        200: {"content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}}},
        **READ,
    },
    summary="Download an uploaded PDF",
)
async def download_pdf(invoice_id: IdPath, laundry: CurrentLaundry, session: Session) -> Response:
    invoice, content = await invoices.pdf_of(
        session, tenant_id=laundry.tenant_id, invoice_id=invoice_id, laundry_id=laundry.id
    )
    return pdf_response(invoice, content)
