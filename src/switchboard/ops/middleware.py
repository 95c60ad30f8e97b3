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
# within the process and across processes, and cheaper than fresh randomness per request. The
# prefix's top bit is set so that ``hex`` always gives 16 digits (a format specification costs
# about twice as much per request).
_ID_BASE = (secrets.randbits(32) | 0x8000_0000) << 32
_ID_COUNTER = itertools.count(1)


def new_request_id() -> str:
    return hex(_ID_BASE | (next(_ID_COUNTER) & 0xFFFF_FFFF))[2:]


def route_template(scope: Scope) -> str:
    """The matched route's path template (``/api.ashx/v1/calls/{call_id}``), never the raw path,
    so that neither log fields nor metric labels carry identifiers."""
    route: Any = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return UNMATCHED
    prefix = scope.get("root_path", "")[len(scope.get("app_root_path", "")) :]
    return f"{prefix}{path}" or "/"


def request_id(scope: Scope) -> str:
    """The request's well-formed ``X-Request-Id`` (the last one sent), or a new one."""
    given = ""
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER and _VALID_ID.match(value):
            given = value.decode()
    return given or new_request_id()


def finished(
    metrics: Metrics | None, method: str, route: str, status: int, seconds: float, rid: str
) -> None:
    """The request's latency observation and access log line."""
    if metrics is not None:
        metrics.observe(method, route, status, seconds)
    access_line(method, route, status, seconds, rid)


def access_line(method: str, route: str, status: int, seconds: float, rid: str) -> None:
    """The request's access log line, when the log takes it."""
    if log.isEnabledFor(logging.INFO):  # the fields are built only for a line written
        log.info(
            "%s %s %d %.1fms",
            method,
            route,
            status,
            seconds * 1000,
            extra={
                "method": method,
                "route": route,
                "status": status,
                "duration_ms": round(seconds * 1000, 2),
                "request_id": rid,
            },
        )


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
        rid = request_id(scope)
        scope.setdefault("state", {})["request_id"] = rid
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [(k, v) for k, v in message.get("headers", ()) if k != REQUEST_ID_HEADER]
                headers.append((REQUEST_ID_HEADER, rid.encode()))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            finished(self.metrics, scope["method"], route_template(scope), status, seconds, rid)
