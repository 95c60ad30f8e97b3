"""The simulated bridge's room endpoints (docs/bridge-protocol.md, "Rooms").

It keeps which rooms are open on its "SFU" and answers promote, demote and leave like a real
bridge; it carries no media, so publisher and subscriber offers are refused with
``501 sfu_unavailable`` (a room on the simulated bridge signals in mesh and cascades, but its
media moves only in mesh).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from switchboard.bridge import protocol


def _json(data: object, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json")


class SimulatedRooms:
    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.open: set[tuple[str, str]] = set()

    def routes(self) -> list[Route]:
        return [
            Route(protocol.ROOM_PROMOTE_PATH, self._promote, methods=["POST"]),
            Route(protocol.ROOM_DEMOTE_PATH, self._demote, methods=["POST"]),
            Route(protocol.ROOM_LEAVE_PATH, self._leave, methods=["POST"]),
            Route(protocol.ROOM_PUBLISHERS_PATH, self._no_media("publish"), methods=["POST"]),
            Route(protocol.ROOM_SUBSCRIBERS_PATH, self._no_media("subscribe"), methods=["POST"]),
            Route(protocol.ROOM_SUBSCRIBER_ANSWER_PATH, self._no_media("answer"), methods=["POST"]),
        ]

    async def _ref(self, request: Request, phase: str) -> protocol.RoomRef | Response:
        body = await request.body()
        if not protocol.verify(self.secret, body, request.headers.get(protocol.SIGNATURE_HEADER)):
            return _json({"code": "bad_signature", "phase": phase, "error": "bad signature"}, 401)
        try:
            return protocol.RoomRef.model_validate_json(body)
        except ValidationError:
            return _json({"code": "bad_request", "phase": phase, "error": "not a room ref"}, 400)

    async def _promote(self, request: Request) -> Response:
        ref = await self._ref(request, "promote")
        if isinstance(ref, Response):
            return ref
        self.open.add((ref.tenant, ref.room))
        reply = protocol.RoomPromoted(mode="sfu", sfu_room=f"sim-{ref.tenant}-{ref.room}")
        return _json(reply.model_dump(mode="json"))

    async def _demote(self, request: Request) -> Response:
        ref = await self._ref(request, "demote")
        if isinstance(ref, Response):
            return ref
        self.open.discard((ref.tenant, ref.room))
        return _json(protocol.RoomPromoted(mode="mesh").model_dump(mode="json"))

    async def _leave(self, request: Request) -> Response:
        ref = await self._ref(request, "leave")
        return ref if isinstance(ref, Response) else _json({})

    def _no_media(self, phase: protocol.RoomErrorPhase) -> Callable[[Request], Awaitable[Response]]:
        async def refuse(request: Request) -> Response:
            ref = await self._ref(request, phase)
            if isinstance(ref, Response):
                return ref
            error = protocol.RoomError(
                code="sfu_unavailable", phase=phase, error="the simulated bridge carries no media"
            )
            return _json(error.model_dump(mode="json"), 501)

        return refuse
