"""Calls: the list with live status (server-sent events), placing a call, hang-up, detail."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response, StreamingResponse

from switchboard.console.deps import FormOperator, OperatorDep, render
from switchboard.kit.db import Database
from switchboard.kit.errors import NotFound
from switchboard.kit.schemas import FORM
from switchboard.platform.calls import service
from switchboard.platform.calls.repository import record_values
from switchboard.platform.calls.schemas import CallCreate, CallRecord
from switchboard.platform.calls.tasks import PROCESS_OWNER
from switchboard.platform.events import repository as events
from switchboard.platform.transcripts import service as transcripts
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants.config import VOICES

router = APIRouter(prefix="/calls")

PAGE_SIZE = 50
LIVE_POLL_SECONDS = 1.0
LIVE_STREAM_SECONDS = 120  # the browser reconnects by itself after that
CALL_FIELDS = (
    "phone", "displayName", "email", "systemPrompt", "apiKey", "model", "voice", "language",
    "maxSeconds", "retries", "retryDelayMinutes", "scheduleAtUtc",
)  # fmt: skip


async def _page(request: Request, operator: OperatorDep, db: Database, **extra: Any) -> Response:
    statuses = service.parse_statuses(request.query_params.get("status") or None)
    rows, total = await service.list_calls(
        db, tenant_id=operator.tenant.id, statuses=statuses, limit=PAGE_SIZE, offset=0
    )
    calls = [CallRecord.model_validate(service.record(row, operator.tenant.name)) for row in rows]
    return render(request, "calls.html", operator, calls=calls, total=total, voices=VOICES, **extra)


@router.get("")
async def calls_page(request: Request, operator: OperatorDep, runtime: RuntimeDep) -> Response:
    return await _page(request, operator, runtime.db)


@router.post("")
async def place_call(
    request: Request, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    fields = {name: str(form.get(name, "")) for name in CALL_FIELDS}
    body = CallCreate.model_validate(
        {k: v for k, v in fields.items() if v.strip() != ""}, context=FORM
    )
    created = await service.create_call(
        session, runtime=runtime, caller=operator.caller, body=body, owner=PROCESS_OWNER
    )
    return RedirectResponse(f"/admin/calls/{created.call_id}?placed=1", status_code=303)


@router.get("/live")
async def live(request: Request, operator: OperatorDep, runtime: RuntimeDep) -> Response:
    """``call`` events with ``{callId, status, endedReason, endedAtUtc}``: one per listed
    call when the stream opens, then one whenever a listed call changes."""
    tenant_id = operator.tenant.id

    async def snapshot() -> dict[str, dict[str, str | None]]:
        rows, _ = await service.list_calls(
            runtime.db, tenant_id=tenant_id, statuses=[], limit=PAGE_SIZE, offset=0
        )
        records = [service.record(row, "") for row in rows]
        return {
            r["callId"]: {"callId": r["callId"], "status": r["status"],
                          "endedReason": r["endedReason"], "endedAtUtc": r["endedAtUtc"]}
            for r in records
        }  # fmt: skip

    async def stream() -> AsyncIterator[bytes]:
        yield b"retry: 2000\n\n"
        # Every listed call first: what changed between the page's render (or the last stream's
        # end) and this stream's first read would otherwise never be sent.
        known: dict[str, dict[str, str | None]] = {}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LIVE_STREAM_SECONDS
        while loop.time() < deadline and not await request.is_disconnected():
            current = await snapshot()
            for call_id, state in current.items():
                if known.get(call_id) != state:
                    yield b"event: call\ndata: " + orjson.dumps(state) + b"\n\n"
            known = current
            await asyncio.sleep(LIVE_POLL_SECONDS)

    return StreamingResponse(stream(), media_type="text/event-stream")


@router.get("/{call_id}")
async def call_detail(
    request: Request, call_id: str, operator: OperatorDep, session: Session, runtime: RuntimeDep
) -> Response:
    call = await service.get_call(session, tenant_id=operator.tenant.id, call_id=call_id)
    history = await events.events_of_call(
        session, tenant_id=operator.tenant.id, call_id=call.call_id, since=call.created_at
    )
    try:
        transcript = await transcripts.get_transcript(
            session, tenant_id=operator.tenant.id, tenant_name=operator.tenant.name,
            call_id=call.call_id, data_dir=runtime.settings.data_dir,
        )  # fmt: skip
    except NotFound:
        transcript = None
    record = service.record(record_values(call), operator.tenant.name)
    return render(
        request, "call.html", operator, call=CallRecord.model_validate(record),
        events=history, transcript=transcript, placed=request.query_params.get("placed"),
    )  # fmt: skip


@router.post("/{call_id}/hangup")
async def hangup(
    call_id: str, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    await service.hangup(
        session, runtime=runtime, tenant_id=operator.tenant.id, call_id=call_id,
        actor=operator.user.username,
    )  # fmt: skip
    return RedirectResponse(f"/admin/calls/{call_id}", status_code=303)
