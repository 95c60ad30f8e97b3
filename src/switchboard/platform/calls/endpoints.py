"""/api.ashx/v1/calls: place, list, read and hang up outbound AI calls (spec 4.2)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response

from switchboard.identity.deps import AdminCaller, AdminCallerReading
from switchboard.kit.http import JsonResponse
from switchboard.kit.paging import Paging
from switchboard.kit.readcache import cacheable
from switchboard.kit.schemas import ERROR_RESPONSES, ErrorBody, Page
from switchboard.platform.calls import service
from switchboard.platform.calls.repository import record_values
from switchboard.platform.calls.schemas import CallCreate, CallCreated, CallRecord, HangupResult
from switchboard.platform.calls.tasks import PROCESS_OWNER
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/api.ashx/v1/calls", tags=["calls"], responses=ERROR_RESPONSES)

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such call (code `not_found`)"}
}
BRIDGE_ERRORS: dict[int | str, dict[str, Any]] = {
    502: {"model": ErrorBody, "description": "The media bridge is unreachable"},
    503: {"model": ErrorBody, "description": "No media bridge is configured"},
}


IDEMPOTENCY_CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {
        "model": ErrorBody,
        "description": "The Idempotency-Key was used in the last 24 hours with another body"
        " (code `idempotency_key_reused`)",
    }
}


@router.post(
    "",
    response_model=CallCreated,
    responses={**BRIDGE_ERRORS, **IDEMPOTENCY_CONFLICT},
    summary="Place an outbound AI call (now, or at scheduleAtUtc)",
)
async def create_call(
    body: CallCreate,
    caller: AdminCallerReading,
    runtime: RuntimeDep,
    response: Response,
    idempotency_key: Annotated[
        str | None,
        Header(
            description="Any unique string (e.g. a UUID), 1 to 255 printable ASCII characters."
            " Within 24 hours, a request of the same tenant with the same key and body returns"
            " the first answer without placing another call (with `Idempotent-Replayed: true`);"
            " the same key with another body is 409 `idempotency_key_reused`. A request that"
            " failed (4xx, 5xx) stored nothing, so its key may be retried.",
            json_schema_extra={"pattern": service.IDEMPOTENCY_KEY_RE.pattern},
        ),
    ] = None,
) -> CallCreated:
    # No Session: the service opens its transactions, the write one after the dial.
    created, replayed = await service.place_call(
        runtime=runtime, caller=caller, body=body, owner=PROCESS_OWNER,
        idempotency_key=idempotency_key,
    )  # fmt: skip
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return created


@router.get("", response_model=Page[CallRecord], summary="List calls, newest first")
async def list_calls(
    request: Request,
    caller: AdminCallerReading,
    runtime: RuntimeDep,
    paging: Paging,
    status: Annotated[
        str | None,
        Query(
            description="Comma-separated status values, e.g. in-flight,scheduled; a repeated "
            "`status` adds its values",
            pattern=service.STATUS_LIST_PATTERN,
        ),
    ] = None,
) -> JsonResponse:
    # The records are built as JSON objects and sent as they are (``service.record``): the
    # documented model is ``Page[CallRecord]``, checked against these bodies by the tests.
    # FastAPI keeps only the last of a repeated parameter; every one is a filter asked for.
    statuses = service.parse_statuses(",".join(request.query_params.getlist("status")) or status)
    rows, total = await service.list_calls(
        runtime.db, tenant_id=caller.tenant_id, statuses=statuses, limit=paging.limit,
        offset=paging.offset,
    )  # fmt: skip
    tenant = caller.tenant_name
    cacheable(request, caller.expires)
    return JsonResponse(
        {"data": [service.record(row, tenant) for row in rows], **paging.envelope(total)}
    )


@router.get("/{call_id}", response_model=CallRecord, responses=NOT_FOUND, summary="One call record")
async def get_call(
    call_id: str, request: Request, caller: AdminCaller, session: Session
) -> JsonResponse:
    call = await service.get_call(session, tenant_id=caller.tenant_id, call_id=call_id)
    cacheable(request, caller.expires)
    return JsonResponse(service.record(record_values(call), caller.tenant_name))


@router.post(
    "/{call_id}/hangup",
    operation_id="hangupCall",
    response_model=HangupResult,
    response_model_exclude_none=True,
    responses=NOT_FOUND,
    summary="Hang up or cancel a call; a no-op (wasNoop) on an ended call",
)
async def hangup(
    call_id: str, caller: AdminCaller, session: Session, runtime: RuntimeDep
) -> HangupResult:
    return await service.hangup(
        session, runtime=runtime, tenant_id=caller.tenant_id, call_id=call_id,
        actor=caller.username,
    )  # fmt: skip
