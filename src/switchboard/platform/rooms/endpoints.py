"""``/signal.ashx`` for rooms: the signaling WebSocket (``?room=<name>``) and the admin's
``POST /signal.ashx?sfu-mode=sfu|mesh&room=<name>`` (docs/rooms.md)."""

from __future__ import annotations

import logging
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.routing import Match
from starlette.types import Scope
from starlette.websockets import WebSocket

from switchboard.identity.deps import bearer_scheme, request_host
from switchboard.kit.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    NotFound,
    ServiceUnavailable,
    Unauthorized,
)
from switchboard.kit.http import JsonResponse
from switchboard.platform.rooms import service
from switchboard.platform.rooms.fanout import FanoutLost
from switchboard.platform.rooms.hub import LiveRoom, hub_for
from switchboard.platform.rooms.schemas import MODES, Mode, SfuModeBody, SfuModeReply
from switchboard.platform.rooms.signaling import ROOM_NAME, serve
from switchboard.platform.whitelist import service as whitelist
from switchboard.platform.whitelist.endpoints import SIGNATURE_HEADER, signature_scheme
from switchboard.runtime import Runtime, RuntimeDep
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant

log = logging.getLogger("switchboard.rooms")

PATH = "/signal.ashx"


class SfuModeRoute(APIRoute):
    """Matches ``POST /signal.ashx`` only when the query names ``sfu-mode``, so the whitelist's
    handler keeps every other POST on the path."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match != Match.NONE and b"sfu-mode=" not in scope.get("query_string", b""):
            return Match.NONE, {}
        return match, child


router = APIRouter(tags=["rooms"], route_class=SfuModeRoute)


@router.websocket(PATH)
async def signaling(websocket: WebSocket) -> None:
    runtime: Runtime = websocket.app.state.runtime
    await serve(websocket, runtime)


def canonical_string(tenant: str, room: str, mode: str, body_length: int) -> str:
    """What ``X-Platform-Admin-Signature`` signs for ``sfu-mode``."""
    return f"sfu-mode|{tenant}|{room}|{mode}|{body_length}"


@router.post(PATH, include_in_schema=False)
async def sfu_mode(
    request: Request,
    runtime: RuntimeDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
    signature: Annotated[str | None, Depends(signature_scheme)],
    mode: Annotated[str, Query(alias="sfu-mode")],
    room: Annotated[str, Query()] = "",
) -> JsonResponse:
    """Flip a room's media mode: the admin bearer of the Host's tenant or the signature.

    No request-wide transaction: the bridge call sits between the check and the event."""
    if mode not in MODES:
        raise BadRequest(f"sfu-mode: one of {', '.join(MODES)}")
    if not ROOM_NAME.match(room):
        raise BadRequest("room: 1 to 64 letters, digits, '.', '_' or '-'")
    body = await request.body()
    if credentials is not None and credentials.credentials:  # outside any transaction (0029)
        await runtime.authenticator.prepare(request_host(request), credentials.credentials)
    async with runtime.db.transaction(read_only=True) as session:
        tenant = await tenants.resolve_host(session, request_host(request))
        if tenant is None:
            raise NotFound("no tenant serves this host")
        actor = await _authorise(runtime, session, request, tenant, credentials, signature,
                                 canonical_string(tenant.name, room, mode, len(body)))  # fmt: skip
    try:
        parsed = SfuModeBody.model_validate(orjson.loads(body)) if body else SfuModeBody()
    except (orjson.JSONDecodeError, ValidationError):
        raise BadRequest("the body is an optional JSON object {reason}") from None
    reply, status = await flip(runtime, tenant.id, tenant.name, room, mode, actor, parsed.reason)
    return JsonResponse(reply.model_dump(mode="json"), status_code=status)


async def _authorise(
    runtime: Runtime,
    session: AsyncSession,
    request: Request,
    tenant: Tenant,
    credentials: HTTPAuthorizationCredentials | None,
    signature: str | None,
    canonical: str,
) -> str:
    """The actor: ``signature``, or the username of an admin bearer of the tenant."""
    if signature is not None:
        secret = runtime.box.open(tenant.signaling_secret)
        if not whitelist.signature_valid(secret, canonical, signature):
            raise ApiError(f"{SIGNATURE_HEADER} does not match", code="invalid_signature",
                           status=401)  # fmt: skip
        return "signature"
    if credentials is None or not credentials.credentials:
        raise Unauthorized(f"a bearer token or {SIGNATURE_HEADER} is required", presented=False)
    caller = await runtime.authenticator.authenticate(
        session, credentials.credentials, host=request_host(request)
    )
    if caller.tenant_id != tenant.id:
        raise Forbidden("the bearer belongs to another tenant than this Host's")
    if not caller.is_admin:
        raise Forbidden("sfu-mode requires role=admin")
    return caller.username


async def flip(
    runtime: Runtime, tenant_id: int, tenant_name: str, room_name: str, mode: str, actor: str,
    reason: str,
) -> tuple[SfuModeReply, int]:  # fmt: skip
    """The reply and its status: 200, 502 when the bridge failed the flip, 503 when no bridge
    is configured (spec 7)."""
    hub = hub_for(runtime)
    room = hub.find(tenant_id, room_name)
    live = room is not None
    if room is None:
        room = hub.detached(tenant_id, tenant_name, room_name)
        if room.fanout is None:  # with the fan-out, ``locked`` reads the room
            await service.load(runtime, room)
    try:
        async with service.locked(runtime, room):
            return await _flip_locked(runtime, room, mode, actor, reason, live=live)
    except FanoutLost as exc:
        raise ApiError(str(exc), code="room_fanout_unavailable", status=503) from None


async def _flip_locked(
    runtime: Runtime, room: LiveRoom, mode: str, actor: str, reason: str, *, live: bool
) -> tuple[SfuModeReply, int]:
    tenant_name, room_name = room.tenant_name, room.name
    target: Mode = "sfu" if mode == "sfu" else "mesh"
    if room.mode == target:
        return SfuModeReply(ok=True, tenant=tenant_name, room=room_name, mode=target,
                            changed=False), 200  # fmt: skip
    text = reason or "admin-override"
    if target == "sfu":
        answer = await service.promote(runtime, room, trigger="admin", reason=text,
                                       actor=actor)  # fmt: skip
    else:
        answer = await service.demote(runtime, room, reason=text, actor=actor)
    log.info("room %s sfu-mode=%s by %s (live=%s ok=%s)", room_name, mode, actor, live, answer.ok)
    extra: dict[str, Any] = {} if answer.ok else {"error": service.failure_text(answer)}
    reply = SfuModeReply(ok=answer.ok, tenant=tenant_name, room=room_name, mode=room.mode,
                         changed=answer.ok, **extra)  # fmt: skip
    if answer.ok:
        return reply, 200
    return reply, 503 if answer.code == ServiceUnavailable.code else 502
