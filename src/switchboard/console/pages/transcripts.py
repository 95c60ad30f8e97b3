"""Transcripts: search by text, source and start time; one transcript with its turns."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from switchboard.console.deps import FormOperator, OperatorDep, form_int, render
from switchboard.kit.paging import PageParams
from switchboard.platform.shares import service as shares
from switchboard.platform.shares.schemas import ShareCreate
from switchboard.platform.transcripts import service
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants import service as tenants
from switchboard.web.flash import once_for, show_once

router = APIRouter(prefix="/transcripts")

PAGE_SIZE = 50
SHARES_SHOWN = PageParams(limit=100, offset=0, path="", query=())
DEFAULT_TTL_HOURS = 72


@router.get("")
async def search(
    request: Request,
    operator: OperatorDep,
    session: Session,
    q: str = "",
    source: str = "",
    since: str = "",
    offset: int = 0,
) -> Response:
    query = service.parse_filter(source=source or None, q=q or None, since=since or None)
    offset = max(offset, 0)
    found = await service.list_transcripts(
        session, tenant_id=operator.tenant.id, filter=query, limit=PAGE_SIZE, offset=offset
    )
    following = offset + PAGE_SIZE if found.more else None
    total = f"more than {found.total:,}" if found.capped else found.total
    return render(
        request, "transcripts.html", operator, rows=found.rows, total=total, q=q, source=source,
        since=since, offset=offset, following=following, is_outbound=service.is_outbound,
    )  # fmt: skip


@router.get("/{call_id}")
async def detail(
    request: Request, call_id: str, operator: OperatorDep, session: Session, runtime: RuntimeDep
) -> Response:
    """The transcript and its share links; once after a link is made, its public URL."""
    transcript = await service.get_transcript(
        session, tenant_id=operator.tenant.id, tenant_name=operator.tenant.name,
        call_id=call_id, data_dir=runtime.settings.data_dir,
    )  # fmt: skip
    links, _, _ = await shares.list_shares(
        session, tenant_id=operator.tenant.id, call_id=call_id, paging=SHARES_SHOWN
    )
    once = await once_for(request, operator.session)

    async def page(values: dict[str, str]) -> Response:
        created = next((link for link in links if link.id == values.get("share")), None)
        return render(
            request, "transcript.html", operator, transcript=transcript, row=transcript.row,
            shares=links, now=runtime.clock.now(), is_expired=shares.is_expired,
            default_ttl=DEFAULT_TTL_HOURS, max_ttl=shares.MAX_TTL_HOURS, created=created,
            created_url=values.get("url") if created is not None else None,
        )  # fmt: skip

    return await once.show(page)


@router.post("/{call_id}/shares")
async def create_share(
    request: Request, call_id: str, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    """A public link to the transcript; its URL is shown once, on the page redirected to."""
    form = await request.form()
    body = ShareCreate(ttl_hours=form_int(form.get("ttlHours"), "ttlHours", default=0) or 0)
    created = await shares.create_share(
        session, tenant_id=operator.tenant.id, tenant_name=operator.tenant.name,
        call_id=call_id, ttl_hours=body.ttl_hours, created_by=operator.user.username,
        base_url=await tenants.base_url(
            session, operator.tenant.id, runtime.settings.public_scheme
        ),
        clock=runtime.clock,
    )  # fmt: skip
    return await show_once(
        request, session, operator.session, f"/admin/transcripts/{quote(call_id, safe='')}",
        share=created.share.id, url=created.url,
    )  # fmt: skip


@router.post("/shares/{share_id}/revoke")
async def revoke_share(
    share_id: str, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    share, _ = await shares.revoke_share(
        session, tenant_id=operator.tenant.id, tenant_name=operator.tenant.name,
        share_id=share_id, revoked_by=operator.user.username, clock=runtime.clock,
    )  # fmt: skip
    return RedirectResponse(f"/admin/transcripts/{share.call_id}", status_code=303)
