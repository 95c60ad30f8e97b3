"""Rooms: join latency and signaling fan-out over real WebSockets; the detector's cost.

A ``switchboard`` app (the real signaling endpoint, SQLite or PostgreSQL) serves in a child
process pinned to one core; the WebSocket clients (no media) run in this process on the other.

- **fill**: ``--rooms`` rooms are filled to ``--peers`` peers each. Every join is timed from the
  ``join`` frame to its ``welcome`` (the joined event written, the peer list sent) and to the
  moment the *last* peer already in the room holds the ``peer-joined`` fan-out.
- **relay**: in each room one peer sends an ``offer`` to every other peer in turn; timed from the
  send to the relayed frame's arrival.
- **detector**: ``Detector.evaluate`` (a pure function) over a stream of 50 peers' reports, a
  quarter of them stressed; microseconds per report.

The bench fails (``BENCH FAILED``) when a welcome, a fan-out frame or a relayed offer is
missing, duplicated or carries the wrong peer. The tenant's ``AutoPromoteHumanCount`` is set to
its maximum (100) so no join promotes: this measures signaling, not the cascade.

    .venv/bin/python bench/bench_rooms.py [--rooms 1000] [--peers 50] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import multiprocessing
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect

from report import check, fail, scratch_postgres
from switchboard.platform.rooms.detector import Detector, Report, Tunables

HOST = "bench.test"
SECRET = "bench-secret-key-bench-secret-key"


def serve(url: str, data_dir: str, max_peers: int, ready: Any) -> None:
    """Child process: a fresh schema, one tenant, the app on a loopback port."""
    import uvicorn

    from switchboard.app import create_app
    from switchboard.kit.models import Base
    from switchboard.runtime import Runtime
    from switchboard.settings import Settings
    from switchboard.tenants import service as tenants

    with contextlib.suppress(AttributeError, OSError):
        os.sched_setaffinity(0, {0})

    async def main() -> None:
        settings = Settings(database_url=url, data_dir=Path(data_dir), secret_key=SECRET,
                            run_workers=False, room_max_peers=max_peers,
                            room_max_messages_per_second=10_000,
                            # every simulated peer connects from loopback
                            room_max_sockets_per_ip=100_000)  # fmt: skip
        runtime = Runtime(settings)
        async with runtime.db.engine.begin() as conn:
            await conn.run_sync(Base.metadata.drop_all)
            await conn.run_sync(Base.metadata.create_all)
        async with runtime.db.transaction() as session:
            tenant = await tenants.create_tenant(
                session, name="bench", domains=[HOST], clock=runtime.clock, box=runtime.box
            )
            await tenants.set_setting(session, tenant, "Phone:Sfu:AutoPromoteHumanCount", "100")
        config = uvicorn.Config(create_app(runtime=runtime), host="127.0.0.1", port=0,
                                log_config=None, access_log=False, lifespan="on",
                                ws="websockets-sansio", backlog=4096)  # fmt: skip
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve())
        while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to await)
            await asyncio.sleep(0.01)
        ready.send(server.servers[0].sockets[0].getsockname()[1])
        await task

    asyncio.run(main())


class Peer:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.peer_id = ""

    async def send(self, **message: Any) -> float:
        await self.ws.send(orjson.dumps(message).decode())
        return time.perf_counter()

    async def expect(self, kind: str) -> dict[str, Any]:
        async with asyncio.timeout(30):
            while True:
                message: dict[str, Any] = orjson.loads(await self.ws.recv())
                if message["type"] == kind:
                    return message
                check(message["type"] != "error", f"server error: {message}")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(label: str, values_ms: list[float]) -> str:
    return (f"{label}: p50 {pct(values_ms, 0.5):.2f} ms, p99 {pct(values_ms, 0.99):.2f} ms, "
            f"max {max(values_ms):.2f} ms over {len(values_ms):,}")  # fmt: skip


async def fill_room(port: int, room: str, peers: int, welcome: list[float],
                    fanout: list[float]) -> list[Peer]:  # fmt: skip
    inside: list[Peer] = []
    for n in range(peers):
        ws = await connect(f"ws://{HOST}/signal.ashx?room={room}", host="127.0.0.1", port=port,
                           open_timeout=30, max_queue=None)  # fmt: skip
        peer = Peer(ws)
        sent = await peer.send(type="join", name=f"p{n}")
        got = await peer.expect("welcome")
        welcome.append((time.perf_counter() - sent) * 1000)
        check(len(got["peers"]) == n, f"{room}: welcome listed {len(got['peers'])}, not {n}")
        peer.peer_id = got["peerId"]
        for other in inside:
            seen = await other.expect("peer-joined")
            check(seen["peer"]["peerId"] == peer.peer_id, f"{room}: peer-joined for another peer")
        if inside:
            fanout.append((time.perf_counter() - sent) * 1000)
        inside.append(peer)
    return inside


async def relay(room: list[Peer], latencies: list[float]) -> None:
    sender = room[0]
    for other in room[1:]:
        sent = await sender.send(type="offer", to=other.peer_id, sdp="v=0 bench")
        got = await other.expect("offer")
        latencies.append((time.perf_counter() - sent) * 1000)
        check(got["from"] == sender.peer_id, "relayed offer from the wrong peer")


async def clients(port: int, rooms: int, peers: int, concurrency: int) -> None:
    welcome: list[float] = []
    fanout: list[float] = []
    relayed: list[float] = []
    gate = asyncio.Semaphore(concurrency)
    live: list[list[Peer]] = []

    async def one(n: int) -> None:
        async with gate:
            live.append(await fill_room(port, f"r{n}", peers, welcome, fanout))

    started = time.perf_counter()
    await asyncio.gather(*(one(n) for n in range(rooms)))
    fill_seconds = time.perf_counter() - started
    check(len(welcome) == rooms * peers, "a join went unanswered")
    print(f"fill: {rooms:,} rooms x {peers} peers = {rooms * peers:,} sockets in "
          f"{fill_seconds:.1f} s ({rooms * peers / fill_seconds:,.0f} joins/s, "
          f"{concurrency} rooms filling at once)")  # fmt: skip
    print(summary("join -> welcome", welcome))
    print(summary(f"join -> last of up to {peers - 1} peers holds peer-joined", fanout))
    gate = asyncio.Semaphore(concurrency)

    async def relay_one(room: list[Peer]) -> None:
        async with gate:
            await relay(room, relayed)

    await asyncio.gather(*(relay_one(room) for room in live))
    check(len(relayed) == rooms * (peers - 1), "a relayed offer went missing")
    print(summary(f"offer relayed with {rooms * peers:,} sockets open", relayed))
    for room in live:
        for peer in room:
            await peer.ws.close()


def detector_cost(reports: int = 200_000) -> None:
    rng = random.Random(7)
    tunables = Tunables.of({})
    detector = Detector()
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    stream = []
    for n in range(reports):
        bad = rng.random() < 0.25
        stream.append((f"p{rng.randrange(50)}", Report(
            abr_mbps=0.1 if bad else 2.5, loss_pct=1.0, packets_sent=500,
            rtt_ms=80.0), now + dt.timedelta(milliseconds=20 * n)))  # fmt: skip
    fired = 0
    started = time.perf_counter()
    for peer_id, report, at in stream:
        if detector.evaluate(peer_id=peer_id, report=report, now=at, tunables=tunables):
            fired += 1
    elapsed = time.perf_counter() - started
    check(fired > 0, "the detector never fired on a quarter of stressed reports")
    started = time.perf_counter()
    for _ in range(reports // 10):
        Tunables.of({})
    per_tunables = (time.perf_counter() - started) / (reports // 10)
    print(f"detector: {elapsed / reports * 1e6:.2f} us per report ({reports:,} reports of 50 "
          f"peers, fired {fired} times); reading the tunables: "
          f"{per_tunables * 1e6:.2f} us")  # fmt: skip


def run(url: str, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = url or f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        parent, child = multiprocessing.Pipe()
        server = multiprocessing.get_context("fork").Process(
            target=serve, args=(url, tmp, args.peers, child), daemon=True
        )
        server.start()
        try:
            if not parent.poll(60):
                fail("the server did not start")
            port = parent.recv()
            with contextlib.suppress(AttributeError, OSError):
                os.sched_setaffinity(0, {1 % (os.cpu_count() or 1)})
            print(f"backend: {url.split(':')[0]}")
            asyncio.run(clients(port, args.rooms, args.peers, args.concurrency))
        finally:
            server.terminate()
            server.join(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rooms", type=int, default=1000)
    parser.add_argument("--peers", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=8, help="rooms filling at once")
    parser.add_argument("--postgres", default="")
    parser.add_argument("--skip-sockets", action="store_true", help="the detector only")
    args = parser.parse_args()
    check(args.peers >= 2 and args.rooms >= 1, "--peers >= 2 and --rooms >= 1")
    detector_cost()
    if args.skip_sockets:
        return
    if not args.postgres:
        run("", args)
        return
    with scratch_postgres(args.postgres) as url:  # never the tables of a shared database
        run(url, args)


if __name__ == "__main__":
    main()
