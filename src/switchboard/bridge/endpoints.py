"""bridge → platform: the signed callback endpoint ``POST /bridge.ashx/v1/events``."""

from __future__ import annotations

import logging

from fastapi import APIRouter, FastAPI, Request
from pydantic import ValidationError

from switchboard.bridge import protocol
from switchboard.bridge.client import bridge_secret
from switchboard.bridge.protocol import Callback
from switchboard.kit.errors import ApiError, BadRequest
from switchboard.kit.http import JsonResponse, new_api
from switchboard.platform.calls import service as call_service
from switchboard.runtime import Runtime, RuntimeDep, Session

log = logging.getLogger("switchboard.bridge")

router = APIRouter(include_in_schema=False)


class BadSignature(ApiError):
    """The callback's ``X-Bridge-Signature`` does not match its body (401)."""

    status = 401
    code = "bad_signature"


@router.post(protocol.CALLBACK_PATH)
async def bridge_event(request: Request, runtime: RuntimeDep, session: Session) -> JsonResponse:
    body = await request.body()
    if not protocol.verify(
        bridge_secret(runtime), body, request.headers.get(protocol.SIGNATURE_HEADER)
    ):
        raise BadSignature("the bridge signature does not match the body")
    try:
        event = Callback.model_validate_json(body)
    except ValidationError as exc:
        raise BadRequest(f"not a bridge event: {exc.error_count()} invalid field(s)") from None
    if event.protocol != protocol.PROTOCOL_VERSION:
        raise BadRequest(f"unsupported bridge protocol version {event.protocol}")
    applied = await call_service.apply_bridge_event(session, runtime=runtime, event=event)
    return JsonResponse({"ok": True, "applied": applied})


def create_bridge_callback_app(runtime: Runtime) -> FastAPI:
    """Only the callback endpoint: what the in-process simulator posts to."""
    app = new_api(runtime, title="switchboard bridge callbacks", version="1")
    app.include_router(router)
    return app
