"""Share links: REST beside the transcripts (admin), and the public page ``/share/<token>``."""

from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi import APIRouter, Request
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.responses import HTMLResponse, Response

from switchboard.identity.deps import AdminCaller, request_host
from switchboard.kit.clientip import client_ip, parse_networks
from switchboard.kit.clock import iso_utc
from switchboard.kit.errors import NotFound
from switchboard.kit.http import JsonResponse, asked_head, error_response
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import ERROR_RESPONSES, ErrorBody
from switchboard.platform.shares import service
from switchboard.platform.shares.models import TranscriptShare
from switchboard.platform.shares.schemas import (
    ShareCreate,
    ShareCreated,
    SharedTranscriptBody,
    SharedTurn,
    ShareItem,
    SharePage,
    ShareRevoked,
)
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants import service as tenants

router = APIRouter(prefix="/api.ashx/v1", tags=["shares"], responses=ERROR_RESPONSES)
public = APIRouter(tags=["shares"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such transcript or share in this tenant"}
}


def _item(share: TranscriptShare, file: str, now: Any) -> dict[str, Any]:
    return {
        "id": share.id,
        "call_id": share.call_id,
        "file": file,
        "token_hint": service.token_hint(share.token_tail),
        "ttl_hours": share.ttl_hours,
        "created_by": share.created_by,
        "created_utc": iso_utc(share.created_at) or "",
        "expires_utc": iso_utc(share.expires_at),
        "expired": service.is_expired(share, now),
        "views": share.views,
        "last_viewed_utc": iso_utc(share.last_viewed_at),
    }


@router.post(
    "/transcripts/{call_id}/shares",
    status_code=201,
    response_model=ShareCreated,
    responses=NOT_FOUND,
    summary="Create a public share link of a transcript (the URL and token are shown once)",
)
async def create_share(
    call_id: str, body: ShareCreate, caller: AdminCaller, session: Session, runtime: RuntimeDep
) -> ShareCreated:
    created = await service.create_share(
        session,
        tenant_id=caller.tenant_id,
        tenant_name=caller.tenant_name,
        call_id=call_id,
        ttl_hours=body.ttl_hours,
        created_by=caller.username,
        base_url=await tenants.base_url(session, caller.tenant_id, runtime.settings.public_scheme),
        clock=runtime.clock,
    )
    item = _item(created.share, created.file, runtime.clock.now())
    return ShareCreated(**item, url=created.url, token=created.token)


@router.get(
    "/transcripts/{call_id}/shares",
    response_model=SharePage,
    responses=NOT_FOUND,
    summary="A transcript's share links, newest first (without their tokens)",
)
async def list_shares(
    call_id: str, caller: AdminCaller, session: Session, runtime: RuntimeDep, paging: Paging
) -> SharePage:
    rows, total, file = await service.list_shares(
        session, tenant_id=caller.tenant_id, call_id=call_id, paging=paging
    )
    now = runtime.clock.now()
    return SharePage(
        data=[ShareItem(**_item(row, file, now)) for row in rows], **paging.envelope(total)
    )


@router.delete(
    "/shares/{share_id}",
    response_model=ShareRevoked,
    responses=NOT_FOUND,
    summary="Revoke a share link: the token is deleted and its URL answers 404",
)
async def revoke_share(
    share_id: str, caller: AdminCaller, session: Session, runtime: RuntimeDep
) -> ShareRevoked:
    share, file = await service.revoke_share(
        session,
        tenant_id=caller.tenant_id,
        tenant_name=caller.tenant_name,
        share_id=share_id,
        revoked_by=caller.username,
        clock=runtime.clock,
    )
    return ShareRevoked(
        id=share.id,
        call_id=share.call_id,
        file=file,
        token_hint=service.token_hint(share.token_tail),
        revoked_by=caller.username,
        revoked_utc=iso_utc(runtime.clock.now()) or "",
    )


# The public page --------------------------------------------------------------------------

_templates = Environment(
    loader=PackageLoader("switchboard.platform.shares", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
_CSS = resources.files("switchboard.platform.shares").joinpath("static/share.css").read_bytes()
CSS_PATH = "/share/assets/share.css"
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the token is in the URL: never pass it on
    "X-Robots-Tag": "noindex, nofollow",
}


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "").lower()
    return "application/json" in accept and "text/html" not in accept


def _shared_body(shared: service.SharedTranscript) -> SharedTranscriptBody:
    row = shared.detail.row
    return SharedTranscriptBody(
        call_id=row.call_id,
        caller_source=row.caller_source,
        display_name=row.display_name,
        phone=row.phone,
        number=row.number,
        started_utc=iso_utc(row.started_at) or "",
        answered_utc=iso_utc(row.answered_at) or "",
        ended_utc=iso_utc(row.ended_at) or "",
        duration_sec=row.duration_sec,
        outcome=row.outcome,
        expires_utc=iso_utc(shared.share.expires_at),
        turns=[SharedTurn(**turn) for turn in shared.detail.turns],
    )


@public.get(
    "/share/{token}",
    response_model=SharedTranscriptBody,
    responses={
        200: {
            "content": {"text/html": {}},
            "description": "HTML, or JSON for Accept: application/json",
        },
        404: {
            "model": ErrorBody,
            "content": {"text/html": {}},
            "description": "Unknown, revoked or expired share (HTML, or JSON when asked)",
        },
    },
    summary="Public transcript page of a share link (no sign-in); emits share.viewed",
)
async def open_share(token: str, request: Request, runtime: RuntimeDep) -> Response:
    settings = runtime.settings
    peer = request.client.host if request.client else None
    viewer = client_ip(
        peer, request.headers.get("x-forwarded-for"), parse_networks(settings.trusted_proxies)
    )
    as_json = _wants_json(request)
    try:
        # A view is written (count, event), so this GET takes a writing transaction; a HEAD is
        # answered like it but is no view (decision 0015).
        async with runtime.db.transaction() as session:
            tenant = await tenants.resolve_host(session, request_host(request))
            if tenant is None:
                raise NotFound("no tenant serves this host")
            shared = await service.open_share(
                session, tenant_id=tenant.id, tenant_name=tenant.name, token=token,
                viewer_ip=viewer, data_dir=settings.data_dir, clock=runtime.clock,
                count=not asked_head(request),
            )  # fmt: skip
    except NotFound as exc:
        if as_json:
            return error_response(exc)
        html = _templates.get_template("missing.html").render(css=CSS_PATH)
        return HTMLResponse(html, status_code=404, headers=PAGE_HEADERS)
    body = _shared_body(shared)
    if as_json:
        return JsonResponse(body.model_dump(mode="json"), headers=PAGE_HEADERS)
    html = _templates.get_template("share.html").render(t=body, css=CSS_PATH)
    return HTMLResponse(html, headers=PAGE_HEADERS)


@public.get(CSS_PATH, include_in_schema=False)
async def stylesheet() -> Response:
    return Response(_CSS, media_type="text/css")
