"""The split layout on SQLite: ``serve --no-workers`` plus ``switchboard worker`` under load.

Starts both processes on one SQLite file (the built-in simulator in the serve process, a
loopback webhook receiver subscribed to every event), posts ``--calls`` immediate calls with
``--connections`` concurrent clients, waits for the simulated calls to end (the longest runs
its full ``maxSeconds``) and their webhooks to arrive, and counts every 5xx answer and every
error line the two processes logged. The bench fails unless every post was answered 200 with a
call of its own, each call is stored with its number and has ended (or waits for its retry),
every stored webhook delivery was received exactly once, every call sent at least one, and
neither process logged an error or warning.

    .venv/bin/python bench/bench_split_sqlite.py [--calls 1100] [--connections 16]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import orjson
from aiohttp import web

from report import check, fail
from switchboard.platform.calls.models import RETRY_PENDING
from switchboard.platform.calls.service import ENDED_STATUSES
from switchboard.platform.webhooks.models import SUCCEEDED

SECRET = "bench-secret-key-with-at-least-32-characters"
TENANT = "demo"
SETTLED = ENDED_STATUSES | {RETRY_PENDING}  # a call the simulator has finished with
LONGEST_CALL_SEC = 360  # simulated seconds: ringing plus the default maxSeconds of 300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def phone(n: int) -> str:
    return f"+1555{n:07d}"


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
                if (await client.get(url)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    fail(f"{url} did not answer 200")


async def load(base: str, key: str, calls: int, connections: int) -> dict[int, tuple[int, bytes]]:
    """Post ``calls`` calls; the status (0: no answer) and body of each, by its number."""
    answers: dict[int, tuple[int, bytes]] = {}
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(calls):
        queue.put_nowait(n)
    headers = {"Authorization": f"Bearer {key}"}

    async def client_loop(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            n = queue.get_nowait()
            body = {"phone": phone(n), "email": "ops@example.com",
                    "systemPrompt": "Confirm the appointment.", "apiKey": "sk-test"}  # fmt: skip
            try:
                response = await client.post("/api.ashx/v1/calls", json=body, headers=headers)
                answers[n] = (response.status_code, response.content)
            except httpx.TransportError:
                answers[n] = (0, b"")  # the connection failed

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        await asyncio.gather(*(client_loop(client) for _ in range(connections)))
    return answers


def check_answers(answers: dict[int, tuple[int, bytes]], calls: int) -> dict[str, str]:
    """Every post answered 200 with a call of its own; the posted number of each call id."""
    statuses = Counter(status for status, _ in answers.values())
    check(len(answers) == calls, f"{len(answers)} of {calls} posts were sent")
    check(set(statuses) == {200}, f"posts answered {dict(sorted(statuses.items()))}")
    placed: dict[str, str] = {}
    for n, (_, content) in sorted(answers.items()):
        body = orjson.loads(content)
        check(
            body.get("ok") is True and body.get("tenant") == TENANT,
            f"{phone(n)} answered {body}",
        )
        check(body["callId"] not in placed, f"call id {body['callId']} answered twice")
        placed[body["callId"]] = phone(n)
    return placed


def stored(database: Path) -> tuple[list[tuple[str, str, str, int]], list[tuple[str, str, Any]]]:
    """The calls (id, number, status, attempt open) and webhook deliveries (id, status, call id)
    the two processes left in the database."""
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        calls = db.execute("SELECT call_id, phone, status, attempt_open FROM calls").fetchall()
        deliveries = db.execute("SELECT id, status, order_key FROM webhook_deliveries").fetchall()
    return calls, deliveries


async def settle(database: Path, received: Counter[str], within: float) -> None:
    """Wait until every call has ended and every stored delivery was received, at most
    ``within`` seconds (``check_stored`` then says what is missing)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        calls, deliveries = stored(database)
        ended = all(status in SETTLED and not attempt_open for _, _, status, attempt_open in calls)
        delivered = all(status == SUCCEEDED for _, status, _ in deliveries)
        if ended and delivered and {delivery for delivery, _, _ in deliveries} <= received.keys():
            return
        await asyncio.sleep(1)


def check_stored(database: Path, placed: dict[str, str], received: Counter[str]) -> None:
    """Every answered call stored with its number and finished with; every delivery the
    database holds delivered and received once, and none received that it does not hold."""
    calls, deliveries = stored(database)
    numbers = {call_id: number for call_id, number, _, _ in calls}
    check(len(numbers) == len(calls), "a call id stored twice")
    wrong = sum(numbers.get(call_id) != number for call_id, number in placed.items())
    check(
        numbers == placed,
        f"{len(calls)} calls stored for {len(placed)} answered posts, {wrong} of them missing"
        " or with another number",
    )
    unsettled = [
        (call_id, status, bool(attempt_open))
        for call_id, _, status, attempt_open in calls
        if status not in SETTLED or attempt_open
    ]
    check(not unsettled, f"{len(unsettled)} calls not ended, e.g. {unsettled[:3]}")
    undelivered = Counter(status for _, status, _ in deliveries if status != SUCCEEDED)
    check(not undelivered, f"webhook deliveries not delivered: {dict(undelivered)}")
    twice = [delivery for delivery, count in received.items() if count > 1]
    check(not twice, f"{len(twice)} webhook deliveries received more than once")
    ids = {delivery for delivery, _, _ in deliveries}
    check(
        ids == set(received),
        f"{len(ids - set(received))} stored deliveries not received, "
        f"{len(set(received) - ids)} received ones not stored",
    )
    silent = set(placed) - {call_id for _, _, call_id in deliveries}
    check(not silent, f"{len(silent)} calls without a webhook delivery, e.g. {sorted(silent)[:3]}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1100)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--sim-speed", type=float, default=20.0)
    parser.add_argument(
        "--linger", type=float, default=5.0, help="seconds to wait for late log lines"
    )
    args = parser.parse_args()
    check(args.calls >= 1 and args.connections >= 1, "--calls and --connections at least 1")

    received: Counter[str] = Counter()

    async def receive(request: web.Request) -> web.Response:
        await request.read()
        received[request.headers.get("X-Platform-Delivery-Id", "")] += 1
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
        key = cli(env, "apikey", "create", "--tenant", TENANT, "--user", "admin").split()[-1]
        check(key.startswith("ak_"), f"apikey create printed {key!r}")
        cli(env, "webhook", "create", "--tenant", TENANT, "--url",
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
            answers = await load(base, key, args.calls, args.connections)
            elapsed = time.monotonic() - started
            # the simulated calls end and their last webhooks arrive; then any late log lines
            await settle(
                Path(tmp) / "switchboard.db", received, LONGEST_CALL_SEC / args.sim_speed + 60
            )
            await asyncio.sleep(args.linger)
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
        placed = check_answers(answers, args.calls)
        check_stored(Path(tmp) / "switchboard.db", placed, received)
    check(not errors, f"{len(errors)} error and warning lines:\n" + "\n".join(errors[:20]))
    statuses = Counter(status for status, _ in answers.values())
    print(f"{args.calls} calls, {args.connections} connections, {elapsed:.1f} s")
    print(f"statuses: {dict(sorted(statuses.items()))}")
    print(f"webhook deliveries received: {received.total()}")
    print(f"error and warning lines: {len(errors)}")


if __name__ == "__main__":
    asyncio.run(main())
