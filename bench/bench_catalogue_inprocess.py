"""The server's own cost of ``GET /api.ashx/v1`` per request, in-process (no socket, no client).

The root application and a bare ASGI hello are called directly with the same request scope,
``--requests`` times per round, rounds alternating hello, catalogue, hello...; the figure is the
median of the per-round costs. Every catalogue response must be a 200 with the stored body, the
request id and ``no-store``, or the bench fails. This isolates what the application adds to
uvicorn's own HTTP work, which a wrk run on a shared machine cannot separate from the noise.

    .venv/bin/python bench/bench_catalogue_inprocess.py [--requests 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from typing import Any

from report import check
from switchboard.app import create_app
from switchboard.settings import Settings

Message = dict[str, Any]


async def hello(scope: Message, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})  # fmt: skip
    await send({"type": "http.response.body", "body": b'{"hello":"world"}'})


def request_scope() -> Message:
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": "/api.ashx/v1", "raw_path": b"/api.ashx/v1",
        "query_string": b"", "root_path": "", "headers": [(b"host", b"127.0.0.1:8000")],
        "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000),
    }  # fmt: skip


async def receive() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def cost(app: Any, n: int) -> float:
    """Microseconds per request over ``n`` sequential requests."""

    async def drop(message: Message) -> None:
        return None

    started = time.perf_counter()
    for _ in range(n):
        await app(request_scope(), receive, drop)
    return (time.perf_counter() - started) / n * 1e6


async def answered(app: Any) -> list[Message]:
    sent: list[Message] = []

    async def keep(message: Message) -> None:
        sent.append(message)

    await app(request_scope(), receive, keep)
    return sent


async def main(requests: int, rounds: int) -> None:
    os.environ.setdefault("SWITCHBOARD_RUN_WORKERS", "false")
    app = create_app(Settings(data_dir=tempfile.mkdtemp(), public_base_url="http://127.0.0.1:8000"))
    async with app.router.lifespan_context(app):
        start, body = await answered(app)
        headers = dict(start["headers"])
        check(start["status"] == 200, f"catalogue answered {start['status']}")
        check(headers.get(b"cache-control") == b"no-store", "catalogue without no-store")
        check(len(headers.get(b"x-request-id", b"")) == 16, "catalogue without a request id")
        check(b'"routes"' in body["body"], "catalogue body without routes")
        await cost(hello, 500)
        await cost(app, 500)
        bare, served = [], []
        for _ in range(rounds):
            bare.append(await cost(hello, requests))
            served.append(await cost(app, requests))
        bare.append(await cost(hello, requests))
    print(f"{requests} requests x {rounds} rounds, in-process")
    print(f"bare ASGI hello      {statistics.median(bare):6.1f} µs/request")
    print(f"GET /api.ashx/v1     {statistics.median(served):6.1f} µs/request")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.rounds))
