"""``GET /api.ashx/v1`` answered in front of the routing and the request middlewares.

The catalogue is the same stored bytes for every caller (``endpoints.rendered_catalogue``), so the
per-request work of the full stack (routing through the mounts, FastAPI's request handling, the
NUL, body-size and duplicate-key checks, none of which a bodiless request without a query needs)
is all overhead. ``ServeCatalogue`` sits just inside the access log, so the request id, the log
line and the latency metric stay exactly as for every other route, and sets ``no-store`` itself.
Anything but a plain ``GET`` or ``HEAD`` of that exact path (a query string, a trailing slash,
another method) goes on to the full stack and is answered as before (decision 0940).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from switchboard.platform.catalogue.endpoints import CATALOGUE_PATH, rendered_catalogue


@dataclass(frozen=True, slots=True)
class _Route:
    """What the access log reads from ``scope["route"]``: the route template."""

    path: str


class ServeCatalogue:
    def __init__(self, app: ASGIApp, platform: FastAPI) -> None:
        self.app = app
        self.platform = platform
        self.route = _Route(CATALOGUE_PATH)
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
        scope["route"] = self.route
        if self.platform.openapi_schema is not self._schema or not self._body:
            self._body = rendered_catalogue(self.platform)
            self._schema = self.platform.openapi_schema
            self._headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(self._body)).encode()),
                (b"cache-control", b"no-store"),
            ]
        await send({"type": "http.response.start", "status": 200, "headers": list(self._headers)})
        body = b"" if scope["method"] == "HEAD" else self._body
        await send({"type": "http.response.body", "body": body})
