"""The simulated bridge's room endpoints (docs/bridge-protocol.md, "Rooms").

It answers promote, demote, leave, publisher and subscriber offers, subscriber answers and
``ai-peer`` like a real bridge, with the same ``RoomError`` refusals; its SFU is the in-process
aiortc forwarder of ``simulated_sfu``, which reports connections with the room-events callback,
and ``ai-peer`` starts the simulator's AI peer (``simulated_aipeer``), which reports with call
callbacks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from switchboard.bridge import protocol
from switchboard.bridge.simulated_sfu import SfuRefusal, SimulatedSfu

M = TypeVar("M", bound=protocol.RoomRef)
MAX_SDP_BYTES = 64 * 1024


def _json(data: object, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json")


class SimulatedRooms:
    def __init__(
        self, secret: str, sfu: SimulatedSfu, ai_peer: Callable[[protocol.AiPeerRequest], None]
    ) -> None:
        self.secret = secret
        self.sfu = sfu
        self.ai_peer = ai_peer
        self.open: set[tuple[str, str]] = set()

    def routes(self) -> list[Route]:
        return [
            Route(protocol.ROOM_PROMOTE_PATH, self._promote, methods=["POST"]),
            Route(protocol.ROOM_DEMOTE_PATH, self._demote, methods=["POST"]),
            Route(protocol.ROOM_LEAVE_PATH, self._leave, methods=["POST"]),
            Route(protocol.ROOM_PUBLISHERS_PATH, self._publish, methods=["POST"]),
            Route(protocol.ROOM_SUBSCRIBERS_PATH, self._subscribe, methods=["POST"]),
            Route(protocol.ROOM_SUBSCRIBER_ANSWER_PATH, self._answer, methods=["POST"]),
            Route(protocol.ROOM_AI_PEER_PATH, self._ai_peer, methods=["POST"]),
        ]

    async def _ref(self, request: Request, phase: str) -> protocol.RoomRef | Response:
        return await self._parse(request, protocol.RoomRef, phase)

    async def _parse(self, request: Request, model: type[M], phase: str) -> M | Response:
        body = await request.body()
        if not protocol.verify(self.secret, body, request.headers.get(protocol.SIGNATURE_HEADER)):
            return _json({"code": "bad_signature", "phase": phase, "error": "bad signature"}, 401)
        try:
            parsed = model.model_validate_json(body)
        except ValidationError as exc:
            error = f"{exc.error_count()} bad field(s)"
            return _json({"code": "invalid_request", "phase": phase, "error": error}, 400)
        if parsed.protocol != protocol.PROTOCOL_VERSION:
            error = f"unsupported protocol {parsed.protocol}"
            return _json({"code": "invalid_request", "phase": phase, "error": error}, 400)
        if len(getattr(parsed, "sdp", "")) > MAX_SDP_BYTES:
            return _json({"code": "bad_sdp", "phase": phase, "error": "SDP over 64 KiB"}, 400)
        return parsed

    async def _promote(self, request: Request) -> Response:
        ref = await self._ref(request, "promote")
        if isinstance(ref, Response):
            return ref
        self.open.add((ref.tenant, ref.room))
        self.sfu.open(ref.tenant, ref.room)
        reply = protocol.RoomPromoted(mode="sfu", sfu_room=f"sim-{ref.tenant}-{ref.room}")
        return _json(reply.model_dump(mode="json"))

    async def _demote(self, request: Request) -> Response:
        ref = await self._ref(request, "demote")
        if isinstance(ref, Response):
            return ref
        self.open.discard((ref.tenant, ref.room))
        await self.sfu.close(ref.tenant, ref.room)
        return _json(protocol.RoomPromoted(mode="mesh").model_dump(mode="json"))

    async def _leave(self, request: Request) -> Response:
        ref = await self._parse(request, protocol.RoomLeave, "leave")
        if isinstance(ref, Response):
            return ref
        await self.sfu.leave(ref.tenant, ref.room, ref.peer_id)
        return _json({})

    def _refused(self, exc: SfuRefusal, phase: protocol.RoomErrorPhase) -> Response:
        error = protocol.RoomError(code=exc.code, phase=phase, error=str(exc))
        return _json(error.model_dump(mode="json"), exc.status)

    async def _publish(self, request: Request) -> Response:
        offer = await self._parse(request, protocol.PublisherOffer, "publish")
        if isinstance(offer, Response):
            return offer
        try:
            sdp = await self.sfu.publish(offer.tenant, offer.room, offer.peer_id, offer.sdp)
        except SfuRefusal as exc:
            return self._refused(exc, "publish")
        return _json(protocol.SdpReply(sdp=sdp).model_dump(mode="json"))

    async def _subscribe(self, request: Request) -> Response:
        ask = await self._parse(request, protocol.SubscriberRequest, "subscribe")
        if isinstance(ask, Response):
            return ask
        try:
            sdp = await self.sfu.subscribe(
                ask.tenant, ask.room, ask.publisher_peer_id, ask.subscriber_peer_id
            )
        except SfuRefusal as exc:
            return self._refused(exc, "subscribe")
        return _json(protocol.SdpReply(sdp=sdp).model_dump(mode="json"))

    async def _answer(self, request: Request) -> Response:
        reply = await self._parse(request, protocol.SubscriberAnswer, "answer")
        if isinstance(reply, Response):
            return reply
        try:
            await self.sfu.answer(
                reply.tenant, reply.room, reply.publisher_peer_id, reply.subscriber_peer_id,
                reply.sdp,
            )  # fmt: skip
        except SfuRefusal as exc:
            return self._refused(exc, "answer")
        return _json({})

    async def _ai_peer(self, request: Request) -> Response:
        """``200 {}`` once the AI peer is started; it reports the call with callbacks."""
        asked = await self._parse(request, protocol.AiPeerRequest, "ai-peer")
        if isinstance(asked, Response):
            return asked
        self.ai_peer(asked)
        return _json({})
