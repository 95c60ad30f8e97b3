"""What a laundry may see and do: its own confirmed jobs and its own invoices, no more."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import PageParams
from switchboard.linen.laundries.models import Laundry
from switchboard.linen.sheets import service as sheets
from switchboard.linen.sheets.models import LinenSheet
from switchboard.linen.sheets.repository import SheetFilter


async def list_jobs(
    session: AsyncSession,
    *,
    laundry: Laundry,
    statuses: tuple[str, ...],
    updated_since: dt.datetime | None,
    date_from: dt.date | None,
    date_to: dt.date | None,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[LinenSheet], int]:
    where = SheetFilter(
        laundry_id=laundry.id,
        statuses=statuses,
        updated_since=updated_since,
        date_from=date_from,
        date_to=date_to,
        ever_confirmed=True,
    )
    return await sheets.list_sheets(
        session, tenant_id=laundry.tenant_id, where=where, paging=paging, sort=sort,
        default_sort="updatedAt",
    )  # fmt: skip


async def get_job(session: AsyncSession, *, laundry: Laundry, job_id: int) -> LinenSheet:
    return await sheets.job(
        session, tenant_id=laundry.tenant_id, laundry_id=laundry.id, job_id=job_id
    )
