"""Outbound calls: POST /v1/calls on one server core, and dispatcher lateness under a backlog.

* create: the application (uvicorn, pinned to CPU 0, no workers) against a simulated bridge in
  its own process (``switchboard sim bridge``, CPU 1, slowed so no call progresses during the
  run); wrk on CPU 1 posts immediate calls with an API key. Each request validates, stores the
  call, updates the whitelist, resolves trunks, dials the bridge over loopback and commits. Any
  failed request fails the bench, and so does a count of stored calls that differs from the
  answered requests.
* lateness: 100,000 scheduled calls in the table, of which ``--due`` fall due evenly over
  ``--window`` seconds and the rest within the next 30 days; one dispatcher (this process)
  dials them into a recording bridge on loopback. Lateness = dial received minus scheduled time.

    .venv/bin/python bench/bench_calls.py [--duration 10] [--connections 16]
        [--backlog 100000] [--due 2000] [--window 20] [--postgres postgresql+asyncpg://...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson
from aiohttp import web
from sqlalchemy import func, insert, select, text

from report import check, percentile, process_cpu, record, scratch_postgres, wrk
from seed import CallRows
from switchboard.identity import service as identity
from switchboard.models import Base
from switchboard.platform.calls import tasks
from switchboard.platform.calls.models import Call
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

SECRET = "bench-secret-key-with-at-least-32-characters"
BRIDGE_SECRET = "bench-bridge-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pinned(cpu: int) -> list[str]:
    return ["taskset", "-c", str(cpu)] if shutil.which("taskset") else []


async def reset(settings: Settings) -> Runtime:
    runtime = Runtime(settings)
    async with runtime.db.engine.begin() as conn:
        await conn.run_sync(Base.metadata.drop_all)
        await conn.run_sync(Base.metadata.create_all)
    return runtime


async def seed_tenant(runtime: Runtime, host: str) -> tuple[int, str]:
    async with runtime.db.transaction() as session:
        tenant = await tenants.create_tenant(
            session, name="bench", domains=[host], clock=runtime.clock, box=runtime.box
        )
        user = await identity.create_user(
            session, tenant=tenant, username="admin", password="bench-password",
            role="admin", clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        _, key = await identity.create_api_key(
            session, tenant_id=tenant.id, user=user, name="bench", clock=runtime.clock
        )
    return tenant.id, key


def wait_http(url: str) -> None:
    for _ in range(150):
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url, timeout=0.5)
            return
        time.sleep(0.1)
    raise SystemExit(f"{url} did not start")


def bench_create(args: argparse.Namespace, database_url: str, workdir: Path) -> dict[str, str]:
    port, sim_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "SWITCHBOARD_DATA_DIR": str(workdir),
        "SWITCHBOARD_DATABASE_URL": database_url,
        "SWITCHBOARD_PUBLIC_BASE_URL": base,
        "SWITCHBOARD_SECRET_KEY": SECRET,
        "SWITCHBOARD_RUN_WORKERS": "false",
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
        "SWITCHBOARD_BRIDGE_URL": f"http://127.0.0.1:{sim_port}",
        "SWITCHBOARD_BRIDGE_SECRET": BRIDGE_SECRET,
        "SWITCHBOARD_SIM_SPEED": "0.0001",
    }
    settings = Settings(
        data_dir=workdir, database_url=database_url, public_base_url=base, secret_key=SECRET
    )

    async def prepare() -> str:
        runtime = await reset(settings)
        _, key = await seed_tenant(runtime, f"127.0.0.1:{port}")
        await runtime.db.dispose()
        return key

    key = asyncio.run(prepare())
    sim = subprocess.Popen(
        [*pinned(1), sys.executable, "-m", "switchboard", "sim", "bridge", "--port", str(sim_port)],
        env=env,
    )
    app = subprocess.Popen(
        [*pinned(0), sys.executable, "-m", "uvicorn", "switchboard.app:create_app", "--factory",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--no-access-log"],
        env=env,
    )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{sim_port}/v1/health")
        wait_http(f"{base}/api.ashx/v1")
        body = {
            "phone": "+14155550100", "email": "ops@example.com", "apiKey": "bench-ai-key",
            "systemPrompt": "Confirm the delivery window for tomorrow. Be brief and friendly.",
        }  # fmt: skip
        probe = httpx.post(f"{base}/api.ashx/v1/calls", json=body,
                           headers={"Authorization": f"Bearer {key}"})  # fmt: skip
        check(probe.status_code == 200, f"POST /v1/calls: {probe.status_code} {probe.text}")
        cpu = process_cpu(app.pid)  # taskset execs the server: the same process
        result = wrk(
            f"{base}/api.ashx/v1/calls",
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            duration=args.duration,
            connections=args.connections,
            method="POST",
            body=orjson.dumps(body),
        )  # any failed request fails the bench
        cpu = process_cpu(app.pid) - cpu
    finally:
        for proc in (app, sim):
            proc.terminate()
            proc.wait()

    async def stored() -> int:
        runtime = Runtime(settings)
        async with runtime.db.transaction() as session:
            count = (await session.execute(select(func.count()).select_from(Call))).scalar_one()
        await runtime.db.dispose()
        return int(count)

    # Every answered request stored its call: the probe, the requests wrk counted, and at most
    # one more per connection (answered after wrk stopped counting).
    calls = asyncio.run(stored())
    expected = result.requests + 1
    check(
        expected <= calls <= expected + args.connections,
        f"POST /v1/calls: {calls} calls stored for {expected} answered requests",
    )
    return {
        "requests": str(result.requests),
        "req/s": f"{result.rps:.0f}",
        "median": f"{result.p50_ms:.1f} ms",
        "p99": f"{result.p99_ms:.1f} ms",
        # the server's CPU a request (its core is saturated: the p99 follows this figure)
        "server CPU": f"{cpu / result.requests * 1000:.2f} ms a request, "
        f"{cpu / args.duration:.0%} of a core",
        "p99_ms": f"{result.p99_ms}",
    }


async def bench_lateness(
    args: argparse.Namespace, database_url: str, workdir: Path
) -> dict[str, str]:
    bridge_port = free_port()
    settings = Settings(
        data_dir=workdir, database_url=database_url, public_base_url="http://127.0.0.1:1",
        secret_key=SECRET, bridge_url=f"http://127.0.0.1:{bridge_port}",
        bridge_secret=BRIDGE_SECRET, run_workers=False,
    )  # fmt: skip
    runtime = await reset(settings)
    tenant_id, _ = await seed_tenant(runtime, "bench.test")
    received: dict[str, float] = {}
    dials: dict[str, int] = {}
    all_dialled = asyncio.Event()

    async def dial(request: web.Request) -> web.Response:
        data = orjson.loads(await request.read())
        received.setdefault(data["callId"], time.time())
        dials[data["callId"]] = dials.get(data["callId"], 0) + 1
        if len(received) >= args.due:
            all_dialled.set()
        return web.json_response({"accepted": True, "callId": data["callId"], "attempt": 1})

    app = web.Application()
    app.router.add_post("/v1/calls", dial)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", bridge_port).start()

    row = CallRows(runtime, tenant_id).row
    due: dict[str, dt.datetime] = {}

    async def insert_rows(rows: list[dict[str, object]]) -> None:
        for offset in range(0, len(rows), 5000):
            async with runtime.db.transaction() as session:
                await session.execute(insert(Call), rows[offset : offset + 5000])

    seed_started = time.perf_counter()
    now = dt.datetime.now(dt.UTC)
    later = args.backlog - args.due
    await insert_rows([
        row("oac-" + secrets.token_hex(6), now + dt.timedelta(days=1 + 29 * i / later), now)
        for i in range(later)
    ])  # fmt: skip
    # The calls due now are written last, so seeding time does not count as lateness.
    now = dt.datetime.now(dt.UTC)
    start = now + dt.timedelta(seconds=2)
    soon = []
    for i in range(args.due):
        call_id = "oac-" + secrets.token_hex(6)
        due[call_id] = start + dt.timedelta(seconds=args.window * i / args.due)
        soon.append(row(call_id, due[call_id], now))
    await insert_rows(soon)
    seed_seconds = time.perf_counter() - seed_started
    if runtime.db.dialect == "postgresql":
        async with runtime.db.engine.begin() as conn:
            await conn.execute(text("ANALYZE calls"))

    stop = asyncio.Event()
    worker = asyncio.create_task(tasks.dispatcher_worker(runtime, stop))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(all_dialled.wait(), timeout=5 + args.window + 120)
    stop.set()
    await worker
    await runner.cleanup()
    await runtime.db.dispose()
    late = sorted((received[c] - due[c].timestamp()) * 1000 for c in due if c in received)
    missing = args.due - len(late)
    twice = sorted(c for c, n in dials.items() if n > 1)
    check(not missing, f"{missing} of {args.due} due calls were not dialled")
    check(not twice, f"{len(twice)} calls dialled more than once, e.g. {twice[:3]}")
    check(set(dials) <= set(due), "a call not yet due was dialled")
    check(all(x >= 0 for x in late), "a call was dialled before it was due")
    return {
        "due": str(args.due),
        "dialled": str(len(late)),
        "missing": str(missing),
        "early": str(sum(1 for x in late if x < 0)),
        "median ms": f"{statistics.median(late):.0f}" if late else "-",
        "p99 ms": f"{percentile(late, 0.99):.0f}",
        "max ms": f"{late[-1]:.0f}" if late else "-",
        "seed s": f"{seed_seconds:.0f}",
        # All due at once (--window 0): the dispatcher's dialling rate from the first due time.
        "dials/s": f"{len(late) / max(1e-3, max(received.values()) - start.timestamp()):.0f}"
        if received
        else "0",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--backlog", type=int, default=100_000)
    parser.add_argument("--due", type=int, default=2_000)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--postgres", default="", help="server URL; a scratch database is used")
    parser.add_argument("--skip-create", action="store_true")
    parser.add_argument("--skip-lateness", action="store_true")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="sb-bench-calls-"))
    try:
        with contextlib.ExitStack() as stack:
            if args.postgres:
                url = stack.enter_context(scratch_postgres(args.postgres))
                backend = "PostgreSQL"
            else:
                url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
                backend = "SQLite"
            if not args.skip_create:
                created = bench_create(args, url, workdir)
                p99 = float(created.pop("p99_ms"))
                print(f"{backend} POST /v1/calls, {args.connections} connections, "
                      f"{args.duration} s: {created}")  # fmt: skip
                if args.connections == 16:
                    record(f"calls.create_p99.{backend.lower()}", p99)
            if not args.skip_lateness:
                if not args.postgres:
                    (workdir / "bench.db").unlink(missing_ok=True)
                lateness = asyncio.run(bench_lateness(args, url, workdir))
                print(f"{backend} dispatcher lateness, backlog {args.backlog}: {lateness}")
                at_goal = (args.backlog, args.due, args.window) == (100_000, 2_000, 20.0)
                if at_goal:
                    record(f"calls.dispatch_p99.{backend.lower()}", float(lateness["p99 ms"]))
                # The same backlog with every call due at once: how fast the dialling goes.
                if not args.postgres:
                    (workdir / "bench.db").unlink(missing_ok=True)
                burst = asyncio.run(
                    bench_lateness(
                        argparse.Namespace(**{**vars(args), "window": 0.0}), url, workdir
                    )
                )
                print(f"{backend} dispatcher burst, {args.due:,} due at once: {burst}")
                if at_goal:
                    record(f"calls.dial_rate.{backend.lower()}", float(burst["dials/s"]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
