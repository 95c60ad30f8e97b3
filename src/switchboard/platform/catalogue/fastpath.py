"""``GET /api.ashx/v1`` answered in the application's own call, ahead of every layer.

The catalogue is the same stored bytes for every caller (``endpoints.rendered_catalogue``), so the
per-request work of the full stack (the access log's send wrapper, routing through the mounts,
FastAPI's request handling, the NUL, body-size and duplicate-key checks, none of which a bodiless
request without a query needs) is all overhead. ``catalogue_answer`` makes the root
application's front answer (``kit.http.LayeredStarlette``), which does for its own answers what
the access log does for every other: it takes a well-formed ``X-Request-Id`` or makes one and
returns it, counts the latency into the series of the route template, its method and status,
and writes the access log line when the log takes it (``ops.middleware.access_line``), and sets
``no-store`` itself. Anything but a plain ``GET`` or ``HEAD`` of that exact path (a query string,
a trailing slash, another method) goes on to the full stack and is answered as before (decision
0940).

The answer is one closure that calls nothing of ours on the way: the request id's parsing
(``ops.middleware.request_id``) and the latency count (``ops.metrics.RequestLatency.observe``)
are written out here rather than called. On a loaded server every call and lookup on this path
costs several times what it does in a loop, and the two calls with the layer they sat in cost
the catalogue about 4 points of the bare hello's requests/s (issue 19, docs/benchmarks/api.md).
The body is rendered on the first request: the platform's OpenAPI description, which it comes
from, is built once per application.
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_left

from fastapi import FastAPI
from starlette.types import Scope, Send

from switchboard.kit.http import FRONT_METHODS, FrontAnswer
from switchboard.ops.metrics import LATENCY_BUCKETS, Metrics
from switchboard.ops.middleware import (
    REQUEST_ID_HEADER,
    VALID_REQUEST_ID,
    access_line,
    new_request_id,
)
from switchboard.ops.middleware import log as access_log
from switchboard.platform.catalogue.endpoints import CATALOGUE_PATH, rendered_catalogue


def catalogue_answer(platform: FastAPI, metrics: Metrics) -> FrontAnswer:
    """The front answer for ``CATALOGUE_PATH`` (a ``GET`` or ``HEAD`` without a query)."""
    latency = {m: metrics.latency_series(m, CATALOGUE_PATH, 200) for m in FRONT_METHODS}
    clock = time.perf_counter
    logs = access_log.isEnabledFor
    info = logging.INFO
    id_header = REQUEST_ID_HEADER
    well_formed = VALID_REQUEST_ID.match
    buckets = LATENCY_BUCKETS
    body = b""
    headers: list[tuple[bytes, bytes]] = []

    async def answer(scope: Scope, send: Send) -> None:
        nonlocal body, headers
        started = clock()
        rid = ""
        for name, value in scope["headers"]:  # the last well-formed one, as ``request_id``
            if name == id_header and well_formed(value):
                rid = value.decode()
        rid = rid or new_request_id()
        if not body:
            body = rendered_catalogue(platform)
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ]
        method = scope["method"]
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [*headers, (id_header, rid.encode())],
            }
        )
        await send({"type": "http.response.body", "body": body if method == "GET" else b""})
        seconds = clock() - started
        series = latency[method]
        series[bisect_left(buckets, seconds)] += 1
        series[-1] += seconds
        if logs(info):
            access_line(method, CATALOGUE_PATH, 200, seconds, rid)

    return answer
