"""The room paths of protocol v1 (docs/bridge-protocol.md, "Rooms").

Every request is signed; a refusal is a ``RoomError`` body ``{code, phase, error}``:
``401 bad_signature``, ``400 invalid_request``, ``404 unknown_room`` / ``unknown_peer``,
``400 bad_sdp``, ``502 sfu_rejected``, ``503 sfu_unreachable`` (also when the bridge runs
without an SFU). ``ai-peer`` answers ``200 {}`` once the peer is started; it reports the rest
with callbacks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from switchboard.bridge import protocol
from switchboard.bridge.protocol import (
    AiPeerRequest,
    PublisherOffer,
    RoomDemote,
    RoomError,
    RoomErrorPhase,
    RoomLeave,
    RoomPromote,
    RoomPromoted,
    RoomRef,
    SdpReply,
    SubscriberAnswer,
    SubscriberRequest,
)
from switchboard.mediabridge.rooms.aipeer import AiPeers
from switchboard.mediabridge.rooms.sfu import RoomFailure, SfuRooms

M = TypeVar("M", bound=RoomRef)
MAX_SDP_BYTES = 64 * 1024


def _json(data: object, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json")


def refusal(status: int, code: str, phase: RoomErrorPhase, error: str) -> Response:
    return _json(RoomError(code=code, phase=phase, error=error).model_dump(mode="json"), status)


def room_routes(sfu: SfuRooms | None, secret: str, ai_peers: AiPeers | None = None) -> list[Route]:
    async def parse(request: Request, model: type[M], phase: RoomErrorPhase) -> M | Response:
        body = await request.body()
        if not protocol.verify(secret, body, request.headers.get(protocol.SIGNATURE_HEADER)):
            return refusal(401, "bad_signature", phase, "the signature does not match the body")
        try:
            parsed = model.model_validate_json(body)
        except ValidationError as exc:
            return refusal(400, "invalid_request", phase, f"{exc.error_count()} bad field(s)")
        if parsed.protocol != protocol.PROTOCOL_VERSION:
            return refusal(400, "invalid_request", phase, f"unsupported protocol {parsed.protocol}")
        if len(getattr(parsed, "sdp", "")) > MAX_SDP_BYTES:
            return refusal(400, "bad_sdp", phase, "the SDP is larger than 64 KiB")
        return parsed

    def handler(
        model: type[M], phase: RoomErrorPhase, act: Callable[[SfuRooms, M], Awaitable[object]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            parsed = await parse(request, model, phase)
            if isinstance(parsed, Response):
                return parsed
            if sfu is None:
                return refusal(503, "sfu_unreachable", phase, "this bridge runs without an SFU")
            try:
                result = await act(sfu, parsed)
            except RoomFailure as exc:
                return refusal(exc.status, exc.code, phase, str(exc))
            return _json(result)

        return endpoint

    async def promote(sfu: SfuRooms, body: RoomPromote) -> object:
        opened = await sfu.promote(body.tenant, body.room)
        return RoomPromoted(mode="sfu", sfu_room=str(opened.janus_id)).model_dump(mode="json")

    async def demote(sfu: SfuRooms, body: RoomDemote) -> object:
        await sfu.demote(body.tenant, body.room)
        return {"mode": "mesh"}

    async def publish(sfu: SfuRooms, body: PublisherOffer) -> object:
        sdp = await sfu.publish(body.tenant, body.room, body.peer_id, body.sdp)
        return SdpReply(sdp=sdp).model_dump(mode="json")

    async def subscribe(sfu: SfuRooms, body: SubscriberRequest) -> object:
        sdp = await sfu.subscribe(
            body.tenant, body.room, body.publisher_peer_id, body.subscriber_peer_id
        )
        return SdpReply(sdp=sdp).model_dump(mode="json")

    async def answer(sfu: SfuRooms, body: SubscriberAnswer) -> object:
        await sfu.answer(
            body.tenant, body.room, body.publisher_peer_id, body.subscriber_peer_id, body.sdp
        )
        return {}

    async def leave(sfu: SfuRooms, body: RoomLeave) -> object:
        await sfu.leave(body.tenant, body.room, body.peer_id)
        return {}

    async def ai_peer(request: Request) -> Response:
        parsed = await parse(request, AiPeerRequest, "ai-peer")
        if isinstance(parsed, Response):
            return parsed
        if ai_peers is None:
            return refusal(503, "unavailable", "ai-peer", "this bridge runs no AI peers")
        ai_peers.start(parsed)
        return _json({})

    return [
        Route(protocol.ROOM_AI_PEER_PATH, ai_peer, methods=["POST"]),
        Route(protocol.ROOM_PROMOTE_PATH, handler(RoomPromote, "promote", promote),
              methods=["POST"]),
        Route(protocol.ROOM_DEMOTE_PATH, handler(RoomDemote, "demote", demote), methods=["POST"]),
        Route(protocol.ROOM_PUBLISHERS_PATH, handler(PublisherOffer, "publish", publish),
              methods=["POST"]),
        Route(protocol.ROOM_SUBSCRIBERS_PATH, handler(SubscriberRequest, "subscribe", subscribe),
              methods=["POST"]),
        Route(protocol.ROOM_SUBSCRIBER_ANSWER_PATH, handler(SubscriberAnswer, "answer", answer),
              methods=["POST"]),
        Route(protocol.ROOM_LEAVE_PATH, handler(RoomLeave, "leave", leave), methods=["POST"]),
    ]  # fmt: skip
