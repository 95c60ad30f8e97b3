"""One access log line and one latency observation per request, under a request id."""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import time
from collections.abc import Sequence
from typing import Any

from fastapi.routing import iter_route_contexts
from starlette.routing import BaseRoute, Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from switchboard.ops.metrics import Metrics

log = logging.getLogger("switchboard.access")

REQUEST_ID_HEADER = b"x-request-id"
VALID_REQUEST_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,128}$")
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
    so that neither log fields nor metric labels carry identifiers.

    A request answered before the routing (a body above its limit, a duplicate JSON key, a NUL
    in the URL) is labelled with the route it was sent to; a path no route matches, with
    ``UNMATCHED``, even where it fell into a mounted application (whose router then missed).
    """
    if "route" not in scope:
        scope = would_route(scope)
    route: Any = scope.get("route")
    if isinstance(route, Mount) and route.routes:
        return UNMATCHED
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return UNMATCHED
    prefix = scope.get("root_path", "")[len(scope.get("app_root_path", "")) :]
    return f"{prefix}{path}" or "/"


def would_route(scope: Scope) -> Scope:
    """A copy of ``scope`` as the application's routing would leave it: the route chosen at each
    level (a full match, else the first partial one, i.e. a wrong method), through the mounts
    and the routers a FastAPI application includes."""
    routed = dict(scope)
    routes: Sequence[BaseRoute] = getattr(scope.get("app"), "routes", ())
    while routes:
        chosen: tuple[BaseRoute, Scope] | None = None
        for candidate in iter_route_contexts(routes):
            match, child = candidate.matches(routed)
            if match is Match.FULL:
                chosen = (candidate.original_route, child)
                break
            if match is Match.PARTIAL and chosen is None:
                chosen = (candidate.original_route, child)
        if chosen is None:
            break
        route, child = chosen
        routed["route"] = route
        routed.update(child)
        routes = route.routes if isinstance(route, Mount) else ()
    return routed


def request_id(scope: Scope) -> str:
    """The request's well-formed ``X-Request-Id`` (the last one sent), or a new one."""
    given = ""
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER and VALID_REQUEST_ID.match(value):
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
