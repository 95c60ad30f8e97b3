"""The split layout on SQLite: ``serve --no-workers`` plus ``switchboard worker`` under load.

Starts both processes on one SQLite file (the built-in simulator in the serve process, a
loopback webhook receiver subscribed to every event), posts ``--calls`` immediate calls with
``--connections`` concurrent clients, waits for the simulated calls to end, and counts every
5xx answer and every error line the two processes logged.

    .venv/bin/python bench/bench_split_sqlite.py [--calls 1100] [--connections 16]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from aiohttp import web

SECRET = "bench-secret-key-with-at-least-32-characters"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "switchboard", *args],
        env=env, input=stdin, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return result.stdout


async def wait_up(url: str) -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(600):
            try:
                if (await client.get(url)).status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


async def load(base: str, key: str, calls: int, connections: int) -> dict[int, int]:
    statuses: dict[int, int] = {}
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(calls):
        queue.put_nowait(n)
    headers = {"Authorization": f"Bearer {key}"}

    async def client_loop(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            n = queue.get_nowait()
            body = {"phone": f"+1555{n:07d}", "email": "ops@example.com",
                    "systemPrompt": "Confirm the appointment.", "apiKey": "sk-test"}  # fmt: skip
            try:
                response = await client.post("/api.ashx/v1/calls", json=body, headers=headers)
                status = response.status_code
            except httpx.TransportError:
                status = 0  # the connection failed
            statuses[status] = statuses.get(status, 0) + 1

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        await asyncio.gather(*(client_loop(client) for _ in range(connections)))
    return statuses


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1100)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--sim-speed", type=float, default=20.0)
    args = parser.parse_args()

    received = 0

    async def receive(request: web.Request) -> web.Response:
        nonlocal received
        await request.read()
        received += 1
        return web.Response(status=204)

    receiver = web.Application()
    receiver.router.add_post("/hook", receive)
    runner = web.AppRunner(receiver)
    await runner.setup()
    hook_port = free_port()
    await web.TCPSite(runner, "127.0.0.1", hook_port).start()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "SWITCHBOARD_DATA_DIR": tmp,
            "SWITCHBOARD_SECRET_KEY": SECRET,
            "SWITCHBOARD_PUBLIC_BASE_URL": base,
            "SWITCHBOARD_SIM_SPEED": str(args.sim_speed),
            "SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE": "127.0.0.0/8",
            "SWITCHBOARD_WEBHOOK_RETRY_DELAYS": "1,2",
            "SWITCHBOARD_LOG_LEVEL": "WARNING",
        }
        env.pop("SWITCHBOARD_DATABASE_URL", None)
        cli(env, "migrate")
        cli(env, "demo")
        key = cli(env, "apikey", "create", "--tenant", "demo", "--user", "admin").split()[-1]
        cli(env, "webhook", "create", "--tenant", "demo", "--url",
            f"http://127.0.0.1:{hook_port}/hook", "--events", "*")  # fmt: skip
        logs = Path(tmp)
        serve_log = (logs / "serve.log").open("w")
        worker_log = (logs / "worker.log").open("w")
        serve = subprocess.Popen(  # noqa: ASYNC220 (started once, before the measurement)
            [sys.executable, "-m", "switchboard", "serve", "--port", str(port), "--no-workers"],
            env=env, stdout=serve_log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        worker = subprocess.Popen(  # noqa: ASYNC220
            [sys.executable, "-m", "switchboard", "worker"],
            env=env, stdout=worker_log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            await wait_up(f"{base}/api.ashx/v1")
            started = time.monotonic()
            statuses = await load(base, key, args.calls, args.connections)
            elapsed = time.monotonic() - started
            await asyncio.sleep(60 / args.sim_speed + 5)  # the simulated calls end
        except Exception:
            print((logs / "serve.log").read_text()[-3000:])
            raise
        finally:
            for process in (serve, worker):
                process.terminate()
                process.wait(10)
            serve_log.close()
            worker_log.close()
            await runner.cleanup()
        errors = []
        for name in ("serve.log", "worker.log"):
            for line in (logs / name).read_text().splitlines():
                if " ERROR " in line or " WARNING " in line or "locked" in line:
                    errors.append(f"{name}: {line[:200]}")
    print(f"{args.calls} calls, {args.connections} connections, {elapsed:.1f} s")
    print(f"statuses: {dict(sorted(statuses.items()))}")
    print(f"webhook deliveries received: {received}")
    print(f"error and warning lines: {len(errors)}")
    for line in errors[:20]:
        print("  " + line)


if __name__ == "__main__":
    asyncio.run(main())
