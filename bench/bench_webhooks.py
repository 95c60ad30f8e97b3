"""Webhook delivery: throughput on one sender core, and event-to-first-attempt latency.

The receiver is a minimal aiohttp server in its own process (pinned to CPU 1 when possible)
that answers 204 and records, for each request, now minus the emission time the event
carries (as its ``displayName``).

* throughput: this process, pinned to CPU 0, queues N events for 4 subscriptions, then one
  ``Sender`` delivers them all; the figure is deliveries per second of wall time. The baseline,
  a bare aiohttp client posting the very requests the sender will send (each queued delivery's
  URL, body and eight headers with both signatures, built before the clock starts), runs just
  before and just after the sender in the same run; the ratio is against their mean. The
  whole (queue, baseline, sender, baseline) runs ``--rounds`` times, 3 by default, and the
  figures kept are the medians of the rounds' ratios and rates: one round's ratio moves by a
  tenth with the machine's speed from one minute to the next.
* every run checks the receiver got each delivery exactly once (distinct delivery ids) and
  fails otherwise; the receiver's counters are reset before each phase.
* latency: two ``switchboard worker`` processes run the sender; this process emits events one
  per transaction at a moderate rate; the receiver reports p50/p99 of commit-to-arrival.

    .venv/bin/python bench/bench_webhooks.py [--events 5000] [--rate 50] [--seconds 10]
                                             [--postgres postgresql+asyncpg://127.0.0.1:5432/test]
                                             [--skip-throughput | --skip-latency]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from sqlalchemy import select

from report import check, percentile, record, scratch_postgres
from switchboard.kit import heap
from switchboard.kit.destinations import parse_networks
from switchboard.models import Base
from switchboard.platform.webhooks import service
from switchboard.platform.webhooks.models import Delivery, Subscription
from switchboard.platform.webhooks.outbox import emit
from switchboard.platform.webhooks.signing import (
    platform_signature,
    standard_key,
    standard_signature,
)
from switchboard.platform.webhooks.tasks import Sender
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

SECRET = "bench-secret-key-with-at-least-32-characters"
SUBSCRIPTIONS = 4

RECEIVER = """
import asyncio, sys, time, orjson
from aiohttp import web
latencies = []
count = 0
ids = set()
waiting = []
async def hook(request):
    global count
    body = await request.read()
    count += 1
    delivery = request.headers.get("X-Platform-Delivery-Id")
    if delivery is not None:
        ids.add(delivery)
    t = orjson.loads(body)["data"]["displayName"]
    if t[0].isdigit() and request.headers.get("X-Platform-Attempt") == "1":
        latencies.append(time.time() - float(t))
    for target, reached in waiting:
        if count >= target:
            reached.set()
    return web.Response(status=204)
async def stats(request):
    return web.json_response({"count": count, "unique": len(ids), "latencies": latencies})
async def wait(request):
    # Answers once ``count`` requests arrived (or after ``within`` seconds): the bench waits
    # with one request instead of polling from the core it measures.
    target, reached = int(request.query["count"]), asyncio.Event()
    waiting.append((target, reached))
    try:
        if count < target:
            await asyncio.wait_for(reached.wait(), float(request.query["within"]))
    except TimeoutError:
        pass
    finally:
        waiting.remove((target, reached))
    return await stats(request)
async def reset(request):
    global count
    count = 0
    ids.clear()
    latencies.clear()
    return web.json_response({})
app = web.Application()
app.router.add_post("/hook/{n}", hook)
app.router.add_get("/stats", stats)
app.router.add_get("/wait", wait)
app.router.add_post("/reset", reset)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_cpu() -> float:
    """CPU seconds used so far by this machine's PostgreSQL processes (0 where none runs)."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            name, _, rest = stat.read_text().partition(") ")
            if name.endswith("(postgres"):
                fields = rest.split()
                total += (int(fields[11]) + int(fields[12])) / tick
    return total


def pin(cpu: int) -> None:
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setaffinity(0, {cpu % (os.cpu_count() or 1)})


async def stats(port: int) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/stats") as response,
    ):
        data: dict[str, Any] = await response.json()
        return data


async def reset(port: int) -> None:
    async with aiohttp.ClientSession() as http, http.post(f"http://127.0.0.1:{port}/reset"):
        pass


async def receiver_ready(port: int, within: float = 30.0) -> None:
    """Wait until the receiver (another process) answers, then zero its counters."""
    deadline = time.monotonic() + within
    while True:
        try:
            await reset(port)
            return
        except aiohttp.ClientConnectionError:
            check(time.monotonic() < deadline, f"receiver did not start within {within:g} s")
            await asyncio.sleep(0.05)


async def received(port: int, count: int, within: float = 120.0) -> dict[str, Any]:
    """Wait until the receiver has ``count`` requests (one long request, answered when they
    have arrived); fail unless it got exactly ``count`` requests carrying ``count`` distinct
    delivery ids (every delivery once, none twice)."""
    timeout = aiohttp.ClientTimeout(total=within + 10)
    async with (
        aiohttp.ClientSession(timeout=timeout) as http,
        http.get(
            f"http://127.0.0.1:{port}/wait", params={"count": str(count), "within": str(within)}
        ) as response,
    ):
        await response.read()
    await asyncio.sleep(0.2)  # a duplicate would arrive right behind the last delivery
    seen = await stats(port)
    check(
        seen["count"] == count and seen["unique"] == count,
        f"expected {count} deliveries once each, the receiver got {seen['count']} requests "
        f"with {seen['unique']} distinct delivery ids",
    )
    return seen


async def prepare(settings: Settings, port: int) -> tuple[Runtime, int, str]:
    runtime = Runtime(settings)
    async with runtime.db.engine.begin() as conn:
        await conn.run_sync(Base.metadata.drop_all)
        await conn.run_sync(Base.metadata.create_all)
    async with runtime.db.transaction() as session:
        tenant = await tenants.create_tenant(
            session, name="bench", domains=["bench.test"], clock=runtime.clock, box=runtime.box
        )
        for n in range(SUBSCRIPTIONS):
            await service.create_subscription(
                session,
                tenant_id=tenant.id,
                url=f"http://127.0.0.1:{port}/hook/{n}",
                events=["*"],
                created_by="bench",
                clock=runtime.clock,
                box=runtime.box,
                allow=parse_networks(settings.webhook_allow_private),
            )
    return runtime, tenant.id, tenant.name


def started(call_id: str, display_name: str) -> dict[str, Any]:
    """A ``call.started`` of an outbound call (spec 6.2): ``emit`` refuses any other payload.
    The latency phase's events carry their emission time as the display name."""
    return {"callId": call_id, "phone": "+14155550100", "displayName": display_name,
            "direction": "outbound", "source": "outbound-ai"}  # fmt: skip


async def queue(runtime: Runtime, tenant_id: int, tenant_name: str, events: int) -> None:
    # One event per call, as many calls starting: the deliveries of one call go out one at a
    # time, in order (decision 0207), so events of a single call would measure round trips.
    for start in range(0, events, 500):
        async with runtime.db.transaction() as session:
            for n in range(start, min(start + 500, events)):
                await emit(
                    session,
                    tenant_id=tenant_id,
                    tenant_name=tenant_name,
                    event="call.started",
                    data=started(f"oac-{n:012x}", "x" * 900),  # about 1 KB bodies
                    clock=runtime.clock,
                )


async def requests_of(settings: Settings) -> list[tuple[str, bytes, dict[str, str]]]:
    """The queued deliveries as the sender will POST them: URL, body and signed headers."""
    runtime = Runtime(settings)
    stamp = str(int(runtime.clock.now().timestamp()))
    async with runtime.db.transaction() as session:
        statement = (
            select(Delivery.id, Delivery.event, Delivery.body, Subscription.url,
                   Subscription.secret_sealed)
            .join(Subscription, Subscription.id == Delivery.subscription_id)
            .order_by(Delivery.id)
        )  # fmt: skip
        rows = (await session.execute(statement)).all()
    await runtime.db.dispose()
    requests = []
    for delivery_id, event, body, url, sealed in rows:
        secret = runtime.box.open(sealed)
        headers = {
            "Content-Type": "application/json",
            "X-Platform-Event": event,
            "X-Platform-Signature": platform_signature(secret, body),
            "X-Platform-Delivery-Id": delivery_id,
            "X-Platform-Attempt": "1",
            "webhook-id": delivery_id,
            "webhook-timestamp": stamp,
            "webhook-signature": standard_signature(
                standard_key(secret), delivery_id, int(stamp), body
            ),
        }
        requests.append((url, body, headers))
    return requests


async def baseline(
    port: int, requests: list[tuple[str, bytes, dict[str, str]]], concurrency: int = 64
) -> tuple[float, float]:
    """A bare aiohttp client posting ``requests`` (signed beforehand) to the same receiver:
    the ceiling on this machine. Returns POSTs per second of wall time and this process's CPU
    seconds per POST; fails unless each request arrived exactly once."""
    gate = asyncio.Semaphore(concurrency)
    await reset(port)
    async with aiohttp.ClientSession() as http:

        async def one(url: str, body: bytes, headers: dict[str, str]) -> None:
            async with gate, http.post(url, data=body, headers=headers) as r:
                await r.read()

        began, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one(*request) for request in requests))
        rate = len(requests) / (time.perf_counter() - began)
        cpu = (time.process_time() - cpu) / len(requests)
    seen = await stats(port)
    check(
        seen["count"] == len(requests) and seen["unique"] == len(requests),
        f"baseline: {seen['count']} of {len(requests)} POSTs arrived, "
        f"{seen['unique']} distinct delivery ids",
    )
    await reset(port)
    return rate, cpu


async def staged(settings: Settings, port: int, events: int) -> None:
    """A fresh schema with the bench's subscriptions and ``events`` events queued."""
    runtime, tenant_id, tenant_name = await prepare(settings, port)
    await queue(runtime, tenant_id, tenant_name, events)
    await runtime.db.dispose()


async def throughput(settings: Settings, port: int, total: int) -> tuple[float, float, float]:
    """Deliveries per second of wall time for the ``total`` queued deliveries, this process's
    CPU seconds per delivery (its threads included: SQLite's work, not PostgreSQL's server) and
    the PostgreSQL server's (its processes on this machine, 0 on SQLite)."""
    runtime = Runtime(settings)
    await reset(port)
    stop = asyncio.Event()
    began, cpu, server = time.perf_counter(), time.process_time(), server_cpu()
    async with Sender(runtime) as sender:
        task = asyncio.create_task(sender.run(stop))
        await received(port, total)
        elapsed = time.perf_counter() - began
        cpu, server = time.process_time() - cpu, server_cpu() - server
        stop.set()
        await task
    await runtime.db.dispose()
    return total / elapsed, cpu / total, server / total


def throughput_round(
    settings: Settings, port: int, events: int, backend: str
) -> tuple[float, float]:
    """One round on a freshly queued outbox: the bare baseline, the sender, the baseline again.
    Returns the sender's deliveries per second over the baselines' mean, and its rate."""
    total = events * SUBSCRIPTIONS
    asyncio.run(staged(settings, port, events))
    requests = asyncio.run(requests_of(settings))
    check(len(requests) == total, f"{len(requests)} of {total} deliveries queued")
    # The collector as a worker process runs with it (kit.heap), for both phases.
    heap.settle()
    before, cpu_before = asyncio.run(baseline(port, requests))
    rate, cpu, server = asyncio.run(throughput(settings, port, total))
    after, cpu_after = asyncio.run(baseline(port, requests))
    bare_cpu = (cpu_before + cpu_after) / 2
    print(
        f"baseline: {before:,.0f} then {after:,.0f} bare aiohttp POSTs/s "
        f"(same core, 64 concurrent, the sender's {total} signed requests each), "
        f"{cpu_before * 1e6:.0f} and {cpu_after * 1e6:.0f} us CPU a POST"
    )
    print(
        f"{backend}: {rate:,.0f} deliveries/s from one sender core "
        f"({total} signed ~1 KB POSTs, 4 subscriptions, each arrived once), "
        f"{cpu * 1e6:.0f} us CPU a delivery (bare / sender CPU: {bare_cpu / cpu:.2f})"
        + (f", the database server {server * 1e6:.0f} us" if backend == "postgresql" else "")
    )
    return rate / ((before + after) / 2), rate


async def emit_one(runtime: Runtime, tenant_id: int, tenant_name: str, n: int) -> None:
    async with runtime.db.transaction() as session:
        await emit(
            session,
            tenant_id=tenant_id,
            tenant_name=tenant_name,
            event="call.started",
            data=started(str(n), repr(time.time())),
            clock=runtime.clock,
        )


async def latency(
    settings: Settings, env: dict[str, str], port: int, rate: float, seconds: float, count: int
) -> tuple[float, float, int]:
    runtime, tenant_id, tenant_name = await prepare(settings, port)
    workers = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-m", "switchboard", "worker", env=env, stderr=asyncio.subprocess.PIPE
        )
        for _ in range(count)
    ]
    try:
        for proc in workers:  # imports take seconds: wait until every worker runs
            assert proc.stderr is not None
            while b"worker running" not in await proc.stderr.readline():
                pass
        # Warm-up: both workers are up once a burst is delivered (imports take seconds).
        for n in range(20):
            await emit_one(runtime, tenant_id, tenant_name, -n)
        await received(port, 20 * SUBSCRIPTIONS)
        await reset(port)
        interval = 1 / rate
        deadline = time.perf_counter() + seconds
        sent = 0
        next_at = time.perf_counter()
        while time.perf_counter() < deadline:
            await emit_one(runtime, tenant_id, tenant_name, sent)
            sent += 1
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
        seen = await received(port, sent * SUBSCRIPTIONS, within=30)
        values = sorted(float(v) for v in seen["latencies"])
        check(len(values) == sent * SUBSCRIPTIONS, "a first attempt carried no timestamp")
    finally:
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
        for proc in workers:
            await proc.wait()
        await runtime.db.dispose()
    return percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000, len(values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=50.0, help="events per second (latency)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--postgres", default="")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds; medians kept")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    if not args.postgres:
        run(args)
        return
    with scratch_postgres(args.postgres) as url:  # never the tables of a shared database
        args.postgres = url
        run(args)


def run(args: argparse.Namespace) -> None:

    port = free_port()
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)])
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setaffinity(receiver.pid, {1 % (os.cpu_count() or 1)})
    pin(0)
    try:
        asyncio.run(receiver_ready(port))
        with tempfile.TemporaryDirectory() as tmp:
            url = args.postgres or f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
            backend = "postgresql" if args.postgres else "sqlite"
            settings = Settings(
                database_url=url,
                data_dir=Path(tmp),
                secret_key=SECRET,
                webhook_allow_private=("127.0.0.0/8",),
                run_workers=False,
            )
            if not args.skip_throughput:
                ratios, rates = [], []
                for number in range(1, args.rounds + 1):
                    ratio, rate = throughput_round(settings, port, args.events, backend)
                    print(f"{backend}: round {number}: {ratio:.3f}x the bare client")
                    ratios.append(ratio)
                    rates.append(rate)
                rounds = f"median of {len(ratios)} rounds"
                record(f"webhooks.ratio.{backend}", statistics.median(ratios), rounds)
                record(f"webhooks.rate.{backend}", statistics.median(rates), rounds)
            if args.skip_latency:
                return
            with contextlib.suppress(AttributeError, OSError):
                os.sched_setaffinity(0, range(os.cpu_count() or 1))  # workers spread freely
            env = {
                **os.environ,
                "SWITCHBOARD_DATABASE_URL": url,
                "SWITCHBOARD_DATA_DIR": tmp,
                "SWITCHBOARD_SECRET_KEY": SECRET,
                "SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE": "127.0.0.0/8",
                "SWITCHBOARD_LOG_LEVEL": "WARNING",
            }
            p50, p99, n = asyncio.run(
                latency(settings, env, port, args.rate, args.seconds, args.workers)
            )
            print(
                f"{backend}: event-to-first-attempt p50 {p50:.1f} ms, p99 {p99:.1f} ms "
                f"({n} deliveries, {args.rate:g} events/s x 4 subscriptions, "
                f"{args.workers} workers)"
            )
            record(f"webhooks.first_attempt_p99.{backend}", p99)
    finally:
        receiver.terminate()
        receiver.wait()


if __name__ == "__main__":
    main()
