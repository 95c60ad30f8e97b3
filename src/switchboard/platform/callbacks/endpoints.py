"""bridge → platform: the signed endpoints, ``POST /bridge.ashx/v1/events`` (call events) and
``POST /bridge.ashx/v1/inbound-route`` (who answers an inbound SIP call)."""

from __future__ import annotations

import logging
from typing import TypeVar

from fastapi import APIRouter, FastAPI, Request
from pydantic import ValidationError

from switchboard.bridge import protocol
from switchboard.bridge.protocol import Callback, InboundRouteRequest, RoomCallback
from switchboard.kit.errors import ApiError, BadRequest
from switchboard.kit.http import JsonResponse, new_api
from switchboard.platform.bridging.client import bridge_secret
from switchboard.platform.callbacks import service
from switchboard.platform.calls import service as call_service
from switchboard.platform.rooms import service as room_service
from switchboard.runtime import Runtime, RuntimeDep, Session

log = logging.getLogger("switchboard.bridge")

router = APIRouter(include_in_schema=False)


class BadSignature(ApiError):
    """The callback's ``X-Bridge-Signature`` does not match its body (401)."""

    status = 401
    code = "bad_signature"


MessageT = TypeVar("MessageT", Callback, InboundRouteRequest, RoomCallback)


async def _signed(request: Request, runtime: Runtime, kind: type[MessageT], what: str) -> MessageT:
    """The request's body as ``kind``, once its signature and protocol version check out."""
    body = await request.body()
    if not protocol.verify(
        bridge_secret(runtime), body, request.headers.get(protocol.SIGNATURE_HEADER)
    ):
        raise BadSignature("the bridge signature does not match the body")
    try:
        message = kind.model_validate_json(body)
    except ValidationError as exc:
        raise BadRequest(f"not a bridge {what}: {exc.error_count()} invalid field(s)") from None
    if message.protocol != protocol.PROTOCOL_VERSION:
        raise BadRequest(f"unsupported bridge protocol version {message.protocol}")
    return message


@router.post(protocol.CALLBACK_PATH)
async def bridge_event(request: Request, runtime: RuntimeDep, session: Session) -> JsonResponse:
    event = await _signed(request, runtime, Callback, "event")
    applied = await call_service.apply_bridge_event(session, runtime=runtime, event=event)
    return JsonResponse({"ok": True, "applied": applied})


@router.post(protocol.INBOUND_ROUTE_PATH)
async def inbound_route(request: Request, runtime: RuntimeDep, session: Session) -> JsonResponse:
    """Who answers an inbound SIP call; 404 ``not_found`` when nobody does."""
    asked = await _signed(request, runtime, InboundRouteRequest, "inbound-route request")
    reply = await service.route_inbound(session, request=asked, box=runtime.box)
    return JsonResponse(reply.model_dump(mode="json"))


@router.post(protocol.ROOM_EVENTS_PATH)
async def room_event(request: Request, runtime: RuntimeDep, session: Session) -> JsonResponse:
    """An SFU connection came up: ``sfu.publisher.connected`` / ``sfu.subscriber.connected``."""
    event = await _signed(request, runtime, RoomCallback, "room event")
    await room_service.bridge_connected(session, runtime=runtime, event=event)
    return JsonResponse({"ok": True})


def create_bridge_callback_app(runtime: Runtime) -> FastAPI:
    """Only the callback endpoint: what the in-process simulator posts to."""
    app = new_api(runtime, title="switchboard bridge callbacks", version="1")
    app.include_router(router)
    return app
