"""``GET /api.ashx/v1`` answered in front of every other layer of the application.

The catalogue is the same stored bytes for every caller (``endpoints.rendered_catalogue``), so the
per-request work of the full stack (the access log's send wrapper, routing through the mounts,
FastAPI's request handling, the NUL, body-size and duplicate-key checks, none of which a bodiless
request without a query needs) is all overhead. ``ServeCatalogue`` is the outermost layer and does
for its own answers what the access log does for every other: it takes or makes the request id
and returns it, observes the latency under the route template (into the series of its method and
status, bound once) and writes the access log line (``ops.middleware.request_id`` and
``access_line``, shared with the access log), and sets ``no-store`` itself. Anything but a plain
``GET`` or ``HEAD`` of that exact path (a query string, a trailing slash, another method) goes on
to the full stack and is answered as before (decision 0940).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from switchboard.ops.metrics import Metrics
from switchboard.ops.middleware import REQUEST_ID_HEADER, access_line, request_id
from switchboard.platform.catalogue.endpoints import CATALOGUE_PATH, rendered_catalogue


class ServeCatalogue:
    def __init__(self, app: ASGIApp, platform: FastAPI, metrics: Metrics | None = None) -> None:
        self.app = app
        self.platform = platform
        self.observe: dict[str, Callable[[float], None]] = (
            {m: metrics.latency(m, CATALOGUE_PATH, 200) for m in ("GET", "HEAD")}
            if metrics is not None
            else {}
        )
        self._schema: dict[str, Any] | None = None
        self._body = b""
        self._headers: list[tuple[bytes, bytes]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["path"] != CATALOGUE_PATH
            or scope["query_string"]
            or scope["method"] not in ("GET", "HEAD")
        ):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        rid = request_id(scope)
        if self.platform.openapi_schema is not self._schema or not self._body:
            self._body = rendered_catalogue(self.platform)
            self._schema = self.platform.openapi_schema
            self._headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(self._body)).encode()),
                (b"cache-control", b"no-store"),
            ]
        headers = [*self._headers, (REQUEST_ID_HEADER, rid.encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = b"" if scope["method"] == "HEAD" else self._body
        await send({"type": "http.response.body", "body": body})
        seconds = time.perf_counter() - started
        if self.observe:
            self.observe[scope["method"]](seconds)
        access_line(scope["method"], CATALOGUE_PATH, 200, seconds, rid)
