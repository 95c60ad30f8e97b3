"""One access log line and one latency observation per request, under a request id."""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from switchboard.ops.metrics import Metrics

log = logging.getLogger("switchboard.access")

REQUEST_ID_HEADER = b"x-request-id"
_VALID_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,128}$")
UNMATCHED = "(unmatched)"
# Request ids made here: a random prefix per process and a counter, 16 hex characters; unique
# within the process and across processes, and cheaper than fresh randomness per request.
_ID_PREFIX = secrets.token_hex(4)
_ID_COUNTER = itertools.count(1)


def new_request_id() -> str:
    return f"{_ID_PREFIX}{next(_ID_COUNTER) & 0xFFFFFFFF:08x}"


def route_template(scope: Scope) -> str:
    """The matched route's path template (``/api.ashx/v1/calls/{call_id}``), never the raw path,
    so that neither log fields nor metric labels carry identifiers."""
    route: Any = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return UNMATCHED
    prefix = scope.get("root_path", "")[len(scope.get("app_root_path", "")) :]
    return f"{prefix}{path}" or "/"


class AccessLogMiddleware:
    """Accepts a well-formed ``X-Request-Id`` (or makes one), returns it on the response, and
    logs method, route template, status, duration and the id once the response has started."""

    def __init__(self, app: ASGIApp, metrics: Metrics | None = None) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = ""
        for name, value in scope["headers"]:
            if name == REQUEST_ID_HEADER and _VALID_ID.match(value):
                request_id = value.decode()
        request_id = request_id or new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [(k, v) for k, v in message.get("headers", ()) if k != REQUEST_ID_HEADER]
                headers.append((REQUEST_ID_HEADER, request_id.encode()))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            route = route_template(scope)
            if self.metrics is not None:
                self.metrics.observe(scope["method"], route, status, seconds)
            if log.isEnabledFor(logging.INFO):  # the fields are built only for a line written
                log.info(
                    "%s %s %d %.1fms",
                    scope["method"],
                    route,
                    status,
                    seconds * 1000,
                    extra={
                        "method": scope["method"],
                        "route": route,
                        "status": status,
                        "duration_ms": round(seconds * 1000, 2),
                        "request_id": request_id,
                    },
                )
