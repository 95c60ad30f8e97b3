"""Where the peers of a room split across ``serve`` processes live: PostgreSQL rows or Redis.

What a join costs a process with the fan-out on, measured through the platform's own code on a
scratch PostgreSQL database and a real Redis:

- the join's transaction as today (the event and the room row), for reference;
- the same with the peer's ``room_peers`` row and the counts over every process (decision 0841);
- the same without the row, plus a Redis hash per room (HSET, HLEN), the alternative;
- the room's lock across processes with its state read anew (``service.locked``).

Each join enters the peer into the live room as ``service.admit`` does. Then the run checks what
the joins left behind, and fails otherwise: every room row holds its joins' peer and human counts,
every fanned-out room as many ``room_peers`` rows (of this process, none for the other kinds),
one ``room.peer.joined`` event per join with the counts 1, 2, ... of its room, each HLEN the
hash's size after its HSET and each hash its room's joins, and the lock released with no peer of
another process read.

    .venv/bin/python bench/bench_room_members.py [--postgres URL] [--redis redis://...] [--n 400]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from report import check, percentile
from switchboard.kit.db import Database
from switchboard.models import Base
from switchboard.platform.events import catalogue as ev
from switchboard.platform.events.models import Event
from switchboard.platform.rooms import service
from switchboard.platform.rooms.fanout import Fanout
from switchboard.platform.rooms.hub import LiveRoom, Peer
from switchboard.platform.rooms.models import Room, RoomPeer
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

ROOM = 50


async def _ignore(*_args: Any) -> None:
    return None


def _peer(n: int) -> Peer:
    return Peer(f"p_{n:012x}", f"Peer {n}", "human", False, False, "127.0.0.1", "auto", _ignore)


def _joins(n: int, k: int) -> int:
    """How many of ``n`` joins land in the ``k``-th room of a kind (``ROOM`` each, in order)."""
    return max(0, min(ROOM, n - k * ROOM))


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
        return [(ev.ROOM_PEER_JOINED, {
            "room": room.name, "peerId": peer.peer_id, "name": peer.name, "role": peer.role,
            "verified": peer.verified, "ip": peer.ip, "joinPath": "direct",
            "peerCount": room.peer_count,
        })]  # fmt: skip

    hash_sizes: list[int] = []

    async def today(i: int) -> None:
        room, peer = plain[i // ROOM], _peer(i)
        room.peers[peer.peer_id] = peer
        await service.record(runtime, room, joined(room, peer))

    async def rows(i: int) -> None:
        room, peer = shared[i // ROOM], _peer(i)
        room.peers[peer.peer_id] = peer
        await service.record(runtime, room, joined(room, peer), joined=peer)

    async def redis_hash(i: int) -> None:
        room, peer = hashed[i // ROOM], _peer(i)
        room.peers[peer.peer_id] = peer
        await fanout.redis.hset(hash_key + room.name, peer.peer_id, b"{}")
        hash_sizes.append(await fanout.redis.hlen(hash_key + room.name))
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
        await _check_joins(runtime, tenant.id, n, plain, shared, hashed, fanout.node)
        expected_sizes = [i % ROOM + 1 for i in range(n)]
        check(hash_sizes == expected_sizes, "an HLEN after its HSET miscounted the room's hash")
        for k, room in enumerate(hashed):
            size = await fanout.redis.hlen(hash_key + room.name)
            check(size == _joins(n, k), f"hash of {room.name}: {size} fields, {_joins(n, k)} joins")
        lock_left = await fanout.redis.exists(shared[0].channel + ":lock")
        check(not lock_left, f"the lock of {shared[0].name} is still held after its last release")
        check(not shared[0].remote, f"{shared[0].name}: peers of another process read, none runs")
        check(shared[0].peer_count == _joins(n, 0), f"{shared[0].name}: peers changed under lock")
    finally:
        await fanout.redis.delete(*[hash_key + room.name for room in hashed])
        await fanout.close()
        await runtime.db.dispose()


async def _check_joins(
    runtime: Runtime, tenant_id: int, n: int, plain: list[LiveRoom], shared: list[LiveRoom],
    hashed: list[LiveRoom], node: str,
) -> None:  # fmt: skip
    """What the joins wrote: room counts, ``room_peers`` rows and ``room.peer.joined`` events."""
    ours = Room.tenant_id == tenant_id
    async with runtime.db.transaction(read_only=True) as session:
        stmt = select(Room.name, Room.peer_count, Room.human_count).where(ours)
        counts = {name: (peers, humans) for name, peers, humans in await session.execute(stmt)}
        stmt_rows = (
            select(Room.name, func.count(RoomPeer.id))
            .join(RoomPeer, RoomPeer.room_id == Room.id)
            .where(ours)
            .group_by(Room.name)
        )
        rows = dict((await session.execute(stmt_rows)).all())
        nodes = set((await session.execute(select(RoomPeer.node).distinct())).scalars())
        stmt_events = select(Event.payload).where(
            Event.tenant_id == tenant_id, Event.name == ev.ROOM_PEER_JOINED
        )
        payloads = list((await session.execute(stmt_events)).scalars())
    expected_counts: dict[str, tuple[int, int]] = {}
    expected_rows: dict[str, int] = {}
    for rooms in (plain, shared, hashed):
        for k, room in enumerate(rooms):
            joins = _joins(n, k)
            live = room.peer_count
            check(live == joins, f"{room.name}: {live} live peers after {joins} joins")
            if joins:
                expected_counts[room.name] = (joins, joins)  # every peer joins as a human
                if room.fanout is not None:
                    expected_rows[room.name] = joins
    check(counts == expected_counts, f"rooms' (peers, humans) {counts}, not {expected_counts}")
    check(rows == expected_rows, f"room_peers rows per room {rows}, not {expected_rows}")
    check(nodes <= {node}, f"room_peers rows of nodes {nodes}, only {node} joined peers")
    check(len(payloads) == 3 * n, f"{len(payloads)} room.peer.joined events for {3 * n} joins")
    seen: dict[str, list[int]] = {}
    peer_ids = set()
    for payload in payloads:
        seen.setdefault(payload["room"], []).append(payload["peerCount"])
        peer_ids.add((payload["room"], payload["peerId"]))
    check(len(peer_ids) == 3 * n, "a peer's join was recorded twice")
    for name, (joins, _humans) in expected_counts.items():
        got = sorted(seen.get(name, []))
        check(got == list(range(1, joins + 1)), f"{name}: events' peerCount {got}, 1..{joins}")


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
