"""The bridge client's CPU per dial: httpx (the previous transport, pool of 8) against the
client's aiohttp transport, both posting the same signed dial to one loopback bridge.

The bridge (a bare aiohttp app answering every dial at once) runs in its own process on CPU 1,
the clients in this process on CPU 0, interleaved; 16 dials in flight, as under POST /v1/calls
at 16 connections. Every dial must be answered 200.

    .venv/bin/python bench/bench_bridge_client.py [--dials 3000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import textwrap
import time

import httpx
import orjson

from bench_calls import free_port, pinned, wait_http
from report import check
from switchboard.bridge import protocol
from switchboard.bridge.protocol import DialRequest
from switchboard.platform.bridging.client import BridgeClient

SECRET = "bench-bridge-secret"
BRIDGE = textwrap.dedent("""
    import sys
    from aiohttp import web
    async def dial(request):
        await request.read()
        return web.json_response({"accepted": True, "callId": "oac-bench", "attempt": 1})
    async def health(request):
        return web.Response(text="ok")
    app = web.Application()
    app.router.add_post("/v1/calls", dial)
    app.router.add_get("/v1/health", health)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
""")
DIAL = DialRequest(
    call_id="oac-bench", attempt=1, tenant="bench", phone="+14155550100",
    display_name="+14155550100", trunk_ids=["default"], voice="alloy", language="en",
    model="default", max_seconds=300, system_prompt="Confirm the delivery window.",
    api_key="bench-ai-key", callback_url="http://127.0.0.1:1/bridge", voicemail_message="",
)  # fmt: skip


async def cpu_per_dial(kind: str, base: str, dials: int) -> tuple[float, float]:
    """(CPU microseconds per dial in this process, dials per second)."""
    body = DIAL.model_dump(mode="json")
    if kind == "aiohttp":
        client = BridgeClient(base_url=base, secret=SECRET, callback_url="")

        async def one() -> None:
            await client.dial(DIAL)  # raises unless answered 2xx

        close = client.aclose
    else:
        http = httpx.AsyncClient(
            base_url=base, limits=httpx.Limits(max_connections=8, max_keepalive_connections=8)
        )

        async def one() -> None:
            content = orjson.dumps(body)
            headers = {protocol.SIGNATURE_HEADER: protocol.sign(SECRET, content),
                       "Content-Type": "application/json"}  # fmt: skip
            response = await http.post("/v1/calls", content=content, headers=headers)
            check(response.status_code == 200, f"httpx dial: HTTP {response.status_code}")

        close = http.aclose
    gate = asyncio.Semaphore(16)

    async def gated() -> None:
        async with gate:
            await one()

    await asyncio.gather(*(gated() for _ in range(200)))  # warm the pool
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(gated() for _ in range(dials)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await close()
    return cpu / dials * 1e6, dials / wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dials", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})
    port = free_port()
    bridge = subprocess.Popen([*pinned(1), sys.executable, "-c", BRIDGE, str(port)])
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/health")
        for _ in range(args.rounds):
            for kind in ("httpx", "aiohttp"):
                cpu, rate = asyncio.run(cpu_per_dial(kind, f"http://127.0.0.1:{port}", args.dials))
                print(f"{kind:8} {cpu:6.0f} us of CPU per dial, {rate:6.0f} dials/s")
    finally:
        bridge.terminate()
        bridge.wait()


if __name__ == "__main__":
    main()
