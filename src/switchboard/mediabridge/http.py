"""The bridge's HTTP side of protocol v1: health, dial, hangup, status (docs/bridge-protocol.md).

Every request but the health check is signed; a bad signature is answered ``401 bad_signature``
and a malformed body ``400 invalid_request``, changing nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import orjson
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from switchboard.bridge import protocol
from switchboard.bridge.protocol import CallRef, DialReply, DialRequest, StatusReply
from switchboard.mediabridge.calls import Calls


def _json(data: object, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json")


def _error(status: int, code: str, description: str) -> Response:
    return _json({"error": code, "error_description": description}, status)


def create_app(
    calls: Calls,
    secret: str,
    extra: Sequence[BaseRoute] = (),
    registrations: Callable[[], dict[str, dict[str, object]]] = dict,
    pings: Callable[[], dict[str, dict[str, object]]] = dict,
) -> Starlette:
    """``registrations`` and ``pings``: the state of each trunk's registration and of its
    OPTIONS (``sip/register.py``, ``sip/ping.py``)."""

    async def signed(request: Request) -> bytes | Response:
        body = await request.body()
        if not protocol.verify(secret, body, request.headers.get(protocol.SIGNATURE_HEADER)):
            return _error(401, "bad_signature", "the signature does not match the body")
        return body

    async def health(_request: Request) -> Response:
        return _json({
            "ok": True, "protocol": protocol.PROTOCOL_VERSION, "bridge": calls.instance,
            "registrations": registrations(), "trunks": pings(),
        })  # fmt: skip

    async def dial(request: Request) -> Response:
        body = await signed(request)
        if isinstance(body, Response):
            return body
        try:
            payload = DialRequest.model_validate_json(body)
        except ValidationError as exc:
            return _error(400, "invalid_request", f"not a dial: {exc.error_count()} bad field(s)")
        if payload.protocol != protocol.PROTOCOL_VERSION:
            return _error(400, "invalid_request", f"unsupported protocol {payload.protocol}")
        call = calls.dial(payload)
        reply = DialReply(
            accepted=True, call_id=payload.call_id, attempt=payload.attempt,
            bridge_call_id=call.bridge_call_id,
        )  # fmt: skip
        return _json(reply.model_dump(mode="json"))

    async def ref(request: Request) -> CallRef | Response:
        body = await signed(request)
        if isinstance(body, Response):
            return body
        try:
            parsed = CallRef.model_validate_json(body)
        except ValidationError as exc:
            return _error(
                400, "invalid_request", f"not a call reference: {exc.error_count()} bad field(s)"
            )
        if parsed.call_id != request.path_params["call_id"]:
            return _error(400, "invalid_request", "callId differs from the path")
        return parsed

    async def hangup(request: Request) -> Response:
        parsed = await ref(request)
        if isinstance(parsed, Response):
            return parsed
        call = calls.get(parsed.call_id, parsed.attempt)
        if call is None:
            return _json({"ok": True, "state": "unknown"})
        state = call.state
        calls.hangup(call)
        return _json({"ok": True, "state": state})

    async def status(request: Request) -> Response:
        parsed = await ref(request)
        if isinstance(parsed, Response):
            return parsed
        call = calls.get(parsed.call_id, parsed.attempt)
        reply = StatusReply(
            call_id=parsed.call_id, attempt=parsed.attempt,
            state=call.state if call else "unknown",
            ended=call.ended if call and call.state == "ended" else None,
            events=list(call.events) if call else [],
        )  # fmt: skip
        return _json(reply.model_dump(mode="json"))

    return Starlette(
        routes=[
            Route("/v1/health", health, methods=["GET"]),
            Route("/v1/calls", dial, methods=["POST"]),
            Route("/v1/calls/{call_id}/hangup", hangup, methods=["POST"]),
            Route("/v1/calls/{call_id}/status", status, methods=["POST"]),
            *extra,
        ]
    )
