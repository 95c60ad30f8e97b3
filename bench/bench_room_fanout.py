"""Cross-process fan-out for rooms: PostgreSQL LISTEN/NOTIFY against Redis pub/sub.

What two ``serve`` processes would exchange for a room split between them: a signaling frame
(a relayed candidate of ~300 bytes, an SDP offer of ~6 KB) published by one process and
received by the other. For each transport and size it measures

- one-way latency at a steady 500 messages/s (publisher and subscriber on separate
  connections, timestamps from one clock), p50 and p99;
- burst throughput: 20,000 messages published back to back, until the last one arrives.

Every message must arrive exactly once and in order, or the bench fails. Redis is spoken to in
RESP over a plain socket (no client library needed for PUBLISH/SUBSCRIBE). PostgreSQL refuses a
NOTIFY payload of 8,000 bytes or more; the bench records that too.

    .venv/bin/python bench/bench_room_fanout.py [--postgres URL] [--redis 127.0.0.1:6379]
                                                [--steady 2000] [--burst 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg

from report import check

CHANNEL = "rooms_bench"
RATE = 500


@dataclass(frozen=True)
class Counts:
    steady: int = 2_000  # messages at RATE, for the latency
    burst: int = 20_000  # messages back to back, for the throughput


Publish = Callable[[str], Awaitable[None]]


def payload(n: int, size: int) -> str:
    head = f"{n}|{time.perf_counter():.9f}|"
    return head + "x" * max(0, size - len(head))


class Collector:
    def __init__(self, expected: int) -> None:
        self.latencies: list[float] = []
        self.next = 0
        self.expected = expected
        self.done = asyncio.Event()

    def got(self, body: str) -> None:
        n, sent, _ = body.split("|", 2)
        check(int(n) == self.next, f"message {n} arrived where {self.next} was due")
        self.next += 1
        self.latencies.append((time.perf_counter() - float(sent)) * 1000)
        if self.next == self.expected:
            self.done.set()


async def measure(
    publish: Publish, listen: Callable[[Collector], None], size: int, counts: Counts
) -> str:
    steady = Collector(counts.steady)
    listen(steady)
    started = time.perf_counter()
    for n in range(counts.steady):
        await asyncio.sleep(max(0.0, started + n / RATE - time.perf_counter()))
        await publish(payload(n, size))
    async with asyncio.timeout(30):
        await steady.done.wait()
    lat = sorted(steady.latencies)
    burst = Collector(counts.burst)
    listen(burst)
    started = time.perf_counter()
    for n in range(counts.burst):
        await publish(payload(n, size))
    async with asyncio.timeout(120):
        await burst.done.wait()
    rate = counts.burst / (time.perf_counter() - started)
    return (f"{size:>5} B: p50 {lat[len(lat) // 2]:.3f} ms, p99 {lat[int(len(lat) * 0.99)]:.3f} "
            f"ms at {RATE}/s; burst {rate:,.0f} msg/s")  # fmt: skip


async def postgres(url: str, size: int, counts: Counts) -> str:
    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    sub = await asyncpg.connect(dsn)
    pub = await asyncpg.connect(dsn)
    current: list[Collector] = []
    await sub.add_listener(CHANNEL, lambda *a: current[-1].got(a[3]))
    try:
        if size >= 8000:
            try:
                await pub.execute("SELECT pg_notify($1, $2)", CHANNEL, "x" * size)
            except asyncpg.PostgresError as exc:
                return f"{size:>5} B: refused ({exc})"
            return f"{size:>5} B: accepted"

        async def publish(body: str) -> None:
            await pub.execute("SELECT pg_notify($1, $2)", CHANNEL, body)

        return await measure(publish, current.append, size, counts)
    finally:
        await sub.close()
        await pub.close()


def resp(*parts: str) -> bytes:
    out = [f"*{len(parts)}\r\n".encode()]
    for part in parts:
        data = part.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


async def read_reply(reader: asyncio.StreamReader) -> list[str] | str:
    line = (await reader.readline()).rstrip(b"\r\n")
    kind, rest = line[:1], line[1:]
    if kind == b"*":
        return [str(await read_reply(reader)) for _ in range(int(rest))]
    if kind == b"$":
        data = await reader.readexactly(int(rest) + 2)
        return data[:-2].decode()
    check(kind in (b"+", b":"), f"redis answered {line!r}")
    return rest.decode()


async def redis(address: str, size: int, counts: Counts) -> str:
    host, port = address.rsplit(":", 1)
    sub_r, sub_w = await asyncio.open_connection(host, int(port))
    pub_r, pub_w = await asyncio.open_connection(host, int(port))
    sub_w.write(resp("SUBSCRIBE", CHANNEL))
    await read_reply(sub_r)
    current: list[Collector] = []

    async def pump() -> None:
        while True:
            reply = await read_reply(sub_r)
            if isinstance(reply, list) and reply[0] == "message":
                current[-1].got(reply[2])

    pumping = asyncio.create_task(pump())
    lock = asyncio.Lock()

    async def publish(body: str) -> None:
        async with lock:  # one request, one reply, as a client library's PUBLISH awaits it
            pub_w.write(resp("PUBLISH", CHANNEL, body))
            await read_reply(pub_r)

    try:
        return await measure(publish, current.append, size, counts)
    finally:
        pumping.cancel()
        sub_w.close()
        pub_w.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgres", default="postgresql+asyncpg://127.0.0.1:5432/test")
    parser.add_argument("--redis", default="127.0.0.1:6379")
    parser.add_argument("--steady", type=int, default=Counts.steady)
    parser.add_argument("--burst", type=int, default=Counts.burst)
    args = parser.parse_args()
    counts = Counts(args.steady, args.burst)
    for size in (300, 6000, 16000):
        print("postgres NOTIFY", await postgres(args.postgres, size, counts))
        print("redis PUBLISH  ", await redis(args.redis, size, counts))


if __name__ == "__main__":
    asyncio.run(main())
