"""Routing resolution against tables of 10, 1,000 and 100,000 rows.

For each size it measures, per resolution:
- the compiled index (``OutboundIndex`` / ``InboundIndex``), what call handling uses;
- a plain linear scan with the same semantics, for comparison;
- the full service call ``resolve_outbound`` / ``resolve_inbound`` on a database, which adds
  one primary-key read of the table's revision token per call (index served from the cache);
- the one-off cost of compiling the index after a change.

Numbers are random E.164 numbers; a third of the lookups hit no row (the worst case for a
scan). Loopback only, bounded in time (about a minute at the default sizes).

    .venv/bin/python bench/bench_routing.py [--sizes 10,1000,100000] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import create_async_engine

from switchboard.kit.db import Base
from switchboard.platform.routing import service as routing
from switchboard.platform.routing.matching import (
    InboundIndex,
    InboundRule,
    OutboundIndex,
    OutboundRule,
    first_inbound_linear,
    first_outbound_linear,
)
from switchboard.platform.routing.models import InboundRoute, OutboundRoute
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

RNG = random.Random(7)
LOOKUPS = 2_000
BUDGET_SECONDS = 2.0  # per measured loop


def number() -> str:
    return "+" + str(RNG.randint(1, 99)) + "".join(RNG.choices("0123456789", k=RNG.randint(6, 10)))


def outbound_rows(size: int) -> list[OutboundRule]:
    seen: set[str] = set()
    rows: list[OutboundRule] = []
    while len(rows) < size:
        base = number()[: RNG.randint(3, 9)]
        match = base + "*" if RNG.random() < 0.8 else number()
        if match not in seen:
            seen.add(match)
            rows.append(OutboundRule(match, (f"trunk-{len(rows) % 7}",)))
    return rows


def inbound_rows(size: int) -> list[InboundRule]:
    rows = []
    for i in range(size - 1):
        did = number()[: RNG.randint(4, 12)] + ("*" if RNG.random() < 0.3 else "")
        from_number = RNG.choice(["", "", "anonymous", number()[:4] + "*"])
        rows.append(InboundRule(did, from_number, f"user{i}"))
    rows.append(InboundRule("*", "", "catchall"))
    return rows


def queries(rows: list[str]) -> list[str]:
    """Two thirds derived from rows (hits), one third random (mostly misses)."""
    out = []
    for _ in range(LOOKUPS):
        if rows and RNG.random() < 2 / 3:
            literal = RNG.choice(rows).rstrip("*")
            out.append(literal + "".join(RNG.choices("0123456789", k=3)))
        else:
            out.append(number())
    return out


def per_call_us(fn: Callable[[str], object], inputs: list[str]) -> float:
    """Median over rounds of the mean cost of one call, in microseconds."""
    rounds: list[float] = []
    deadline = time.perf_counter() + BUDGET_SECONDS
    while time.perf_counter() < deadline and len(rounds) < 5:
        started = time.perf_counter()
        count = 0
        for value in inputs:
            fn(value)
            count += 1
            if time.perf_counter() > deadline:
                break
        rounds.append((time.perf_counter() - started) / count * 1e6)
    return statistics.median(rounds)


async def service_us(
    url: str, size: int, out: list[OutboundRule], inn: list[InboundRule]
) -> tuple[float, float, float]:
    """Per-call cost of resolve_outbound / resolve_inbound through a session, and the cold
    compile (first call after a change) of the outbound index."""
    settings = Settings(database_url=url, secret_key="bench-secret-key-with-at-least-32-chars")
    runtime = Runtime(settings)
    async with runtime.db.engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    async with runtime.db.transaction() as session:
        tenant = await tenants.create_tenant(
            session, name=f"bench{size}", domains=[f"bench{size}.test"],
            clock=runtime.clock, box=runtime.box,
        )  # fmt: skip
        tenant_id = tenant.id
        await session.execute(text("DELETE FROM inbound_routes"))
        await session.execute(
            insert(OutboundRoute),
            [{"tenant_id": tenant_id, "position": i, "match": r.match,
              "trunk_ids": list(r.trunk_ids)} for i, r in enumerate(out)],
        )  # fmt: skip
        await session.execute(
            insert(InboundRoute),
            [{"tenant_id": tenant_id, "position": i, "did": r.did, "from_number": r.from_number,
              "user": r.user} for i, r in enumerate(inn)],
        )  # fmt: skip
    numbers = queries([r.match for r in out])[:500]
    dids = queries([r.did for r in inn])[:500]
    async with runtime.db.transaction() as session:
        started = time.perf_counter()
        await routing.resolve_outbound(
            session, tenant_id=tenant_id, number=numbers[0], default_trunk_id="d"
        )
        cold_ms = (time.perf_counter() - started) * 1e3
    async with runtime.db.transaction() as session:
        started = time.perf_counter()
        for value in numbers:
            await routing.resolve_outbound(
                session, tenant_id=tenant_id, number=value, default_trunk_id="d"
            )
        out_us = (time.perf_counter() - started) / len(numbers) * 1e6
        await routing.resolve_inbound(session, tenant_id=tenant_id, did=dids[0], from_number=None)
        started = time.perf_counter()
        for value in dids:
            await routing.resolve_inbound(
                session, tenant_id=tenant_id, did=value, from_number="+4930"
            )
        in_us = (time.perf_counter() - started) / len(dids) * 1e6
    await runtime.db.dispose()
    return out_us, in_us, cold_ms


async def on_scratch_postgres(
    server_url: str, size: int, out: list[OutboundRule], inn: list[InboundRule]
) -> tuple[float, float, float]:
    """Run ``service_us`` in a database of its own on the server, dropped afterwards."""
    name = f"bench_routing_{secrets.token_hex(4)}"
    admin = create_async_engine(server_url, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        return await service_us(server_url.rsplit("/", 1)[0] + "/" + name, size, out, inn)
    finally:
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000,100000")
    parser.add_argument(
        "--postgres", default="", help="also measure the service on this server (scratch DB)"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    print("rows    | outbound index | outbound scan | inbound index | inbound scan | "
          "service out (sqlite) | service in (sqlite) | compile after change")  # fmt: skip
    for size in sizes:
        measure(size, args.postgres)


def measure(size: int, postgres: str) -> None:
    out = outbound_rows(size)
    inn = inbound_rows(size)
    out_index = OutboundIndex(out)
    in_index = InboundIndex(inn)
    numbers = queries([r.match for r in out])
    dids = queries([r.did for r in inn])
    oi = per_call_us(out_index.first, numbers)
    os_ = per_call_us(lambda n: first_outbound_linear(out, n), numbers[:200])
    ii = per_call_us(lambda d: in_index.first(d, "+4930"), dids)
    is_ = per_call_us(lambda d: first_inbound_linear(inn, d, "+4930"), dids[:200])
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        so, si, cold = asyncio.run(service_us(url, size, out, inn))
    print(
        f"{size:>7} | {oi:>11.1f} us | {os_:>10.1f} us | {ii:>10.1f} us | {is_:>9.1f} us | "
        f"{so:>17.1f} us | {si:>16.1f} us | {cold:>17.1f} ms"
    )
    if postgres:
        so, si, cold = asyncio.run(on_scratch_postgres(postgres, size, out, inn))
        print(f"{'':>7}   postgres: service out {so:.1f} us, in {si:.1f} us, "
              f"compile {cold:.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
