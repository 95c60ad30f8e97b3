"""Transcripts: search by text, source and start time; one transcript with its turns."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from switchboard.console.deps import OperatorDep, render
from switchboard.platform.transcripts import service
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/transcripts")

PAGE_SIZE = 50


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
    rows, total = await service.list_transcripts(
        session, tenant_id=operator.tenant.id, filter=query, limit=PAGE_SIZE,
        offset=max(offset, 0),
    )  # fmt: skip
    following = offset + PAGE_SIZE if offset + PAGE_SIZE < total else None
    return render(
        request, "transcripts.html", operator, rows=rows, total=total, q=q, source=source,
        since=since, offset=offset, following=following, is_outbound=service.is_outbound,
    )  # fmt: skip


@router.get("/{call_id}")
async def detail(
    request: Request, call_id: str, operator: OperatorDep, session: Session, runtime: RuntimeDep
) -> Response:
    transcript = await service.get_transcript(
        session, tenant_id=operator.tenant.id, tenant_name=operator.tenant.name,
        call_id=call_id, data_dir=runtime.settings.data_dir,
    )  # fmt: skip
    return render(request, "transcript.html", operator, transcript=transcript, row=transcript.row)
