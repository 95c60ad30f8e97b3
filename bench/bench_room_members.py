"""Where the peers of a room split across ``serve`` processes live: PostgreSQL rows or Redis.

What a join costs a process with the fan-out on, measured through the platform's own code on a
scratch PostgreSQL database and a real Redis:

- the join's transaction as today (the event and the room row), for reference;
- the same with the peer's ``room_peers`` row and the counts over every process (decision 0841);
- the same without the row, plus a Redis hash per room (HSET, HLEN), the alternative;
- the room's lock across processes with its state read anew (``service.locked``).

    .venv/bin/python bench/bench_room_members.py [--postgres URL] [--redis redis://...] [--n 400]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from report import percentile
from switchboard.kit.db import Database
from switchboard.models import Base
from switchboard.platform.events import catalogue as ev
from switchboard.platform.rooms import service
from switchboard.platform.rooms.fanout import Fanout
from switchboard.platform.rooms.hub import LiveRoom, Peer
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

ROOM = 50


async def _ignore(*_args: Any) -> None:
    return None


def _peer(n: int) -> Peer:
    return Peer(f"p_{n:012x}", f"Peer {n}", "human", False, False, "127.0.0.1", "auto", _ignore)


async def _timed(label: str, n: int, step: Callable[[int], Awaitable[None]]) -> None:
    timings = []
    for i in range(n):
        started = time.perf_counter()
        await step(i)
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    print(f"  {label:<46} p50 {percentile(timings, 0.5):6.2f} ms   "
          f"p99 {percentile(timings, 0.99):6.2f} ms")  # fmt: skip


async def run(url: str, redis_url: str, n: int) -> None:
    database = Database(url)
    async with database.engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    await database.dispose()
    settings = Settings(database_url=url, secret_key="bench-secret-with-at-least-32-characters",
                        room_fanout_url=redis_url)  # fmt: skip
    runtime = Runtime(settings)
    async with runtime.db.transaction() as session:
        tenant = await tenants.create_tenant(
            session, name="bench", domains=["bench.test"], clock=runtime.clock, box=runtime.box
        )
    fanout = Fanout(redis_url, deliver=_ignore, lost=_ignore)
    count = n // ROOM + 1  # rooms of SWITCHBOARD_ROOM_MAX_PEERS's default size
    plain = [LiveRoom(tenant.id, "bench", f"plain-{k}") for k in range(count)]
    shared = [LiveRoom(tenant.id, "bench", f"rows-{k}", fanout=fanout) for k in range(count)]
    hashed = [LiveRoom(tenant.id, "bench", f"hash-{k}") for k in range(count)]
    hash_key = f"bench:{uuid.uuid4().hex}:"

    def joined(room: LiveRoom, peer: Peer) -> list[tuple[str, dict[str, Any]]]:
        return [(ev.ROOM_PEER_JOINED, {"room": room.name, "peerId": peer.peer_id,
                                       "peerCount": room.peer_count})]  # fmt: skip

    async def today(i: int) -> None:
        room, peer = plain[i // ROOM], _peer(i)
        await service.record(runtime, room, joined(room, peer))

    async def rows(i: int) -> None:
        room, peer = shared[i // ROOM], _peer(i)
        await service.record(runtime, room, joined(room, peer), joined=peer)

    async def redis_hash(i: int) -> None:
        room, peer = hashed[i // ROOM], _peer(i)
        await fanout.redis.hset(hash_key + room.name, peer.peer_id, b"{}")
        await fanout.redis.hlen(hash_key + room.name)
        await service.record(runtime, room, joined(room, peer))

    async def locked(_i: int) -> None:
        async with service.locked(runtime, shared[0]):
            pass

    try:
        print(f"{n} joins each, in rooms of {ROOM}")
        await _timed("event + room row (single process, today)", n, today)
        await _timed("+ room_peers row and counts (0841)", n, rows)
        await _timed("+ Redis hash HSET/HLEN (the alternative)", n, redis_hash)
        await _timed(f"room lock across processes + read ({ROOM} peers)", n, locked)
    finally:
        await fanout.redis.delete(*[hash_key + room.name for room in hashed])
        await fanout.close()
        await runtime.db.dispose()


async def with_postgres(url: str, redis_url: str, n: int) -> None:
    name = f"bench_members_{uuid.uuid4().hex[:8]}"
    admin = create_async_engine(url, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        await run(f"{url.rpartition('/')[0]}/{name}", redis_url, n)
    finally:
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", default="postgresql+asyncpg://127.0.0.1:5432/test")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--n", type=int, default=400)
    args = parser.parse_args()
    asyncio.run(with_postgres(args.postgres, args.redis, args.n))


if __name__ == "__main__":
    main()
