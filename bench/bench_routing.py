"""Routing resolution against tables of 10, 1,000 and 100,000 rows.

For each size it measures, per resolution:
- the compiled index (``OutboundIndex`` / ``InboundIndex``), what call handling uses;
- a plain linear scan with the same semantics, for comparison;
- the full service call ``resolve_outbound`` / ``resolve_inbound`` on a database, which adds
  one primary-key read of the table's revision token per call (index served from the cache);
- the one-off cost of compiling the index after a change.

Numbers are random E.164 numbers; a third of the lookups are random numbers, which hit no row
(the worst case for a scan) unless a short prefix catches them: about a tenth at 1,000 rows, none
at 100,000. Loopback only, bounded in time (about a minute at the default sizes).

Checked before any figure is printed: the index and the scan give the same row for every
number the scan is timed on, every row the index finds for its own inputs matches that number,
every inbound call finds a row (the catchall), and the service answers every number it is
timed on as the index does.

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

from report import check, fail
from switchboard.kit.models import Base
from switchboard.platform.routing import service as routing
from switchboard.platform.routing.matching import (
    InboundIndex,
    InboundRule,
    OutboundIndex,
    OutboundRule,
    first_inbound_linear,
    first_outbound_linear,
    inbound_matches,
    outbound_matches,
)
from switchboard.platform.routing.models import InboundRoute, OutboundRoute
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

RNG = random.Random(7)
LOOKUPS = 2_000
SCANNED = 200  # lookups the linear scan is timed on
BUDGET_SECONDS = 2.0  # per measured loop
CALLER = "+4930"  # the calling party of every inbound lookup


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
    """Two thirds derived from rows (hits), one third random (misses, unless a prefix catches
    them)."""
    out = []
    for _ in range(LOOKUPS):
        if rows and RNG.random() < 2 / 3:
            literal = RNG.choice(rows).rstrip("*")
            out.append(literal + "".join(RNG.choices("0123456789", k=3)))
        else:
            out.append(number())
    return out


def check_index(
    out: list[OutboundRule],
    inn: list[InboundRule],
    out_index: OutboundIndex,
    in_index: InboundIndex,
    numbers: list[str],
    dids: list[str],
) -> None:
    """The indexes answer as the plain definition does: the same row as the linear scan for
    every input the scan is timed on, and a row that matches for every input of their own."""
    size = len(out)
    for value in numbers[:SCANNED]:
        got, want = out_index.first(value), first_outbound_linear(out, value)
        check(got == want, f"{size} rows: outbound index {got} != scan {want} for {value!r}")
    for value in dids[:SCANNED]:
        got, want = in_index.first(value, CALLER), first_inbound_linear(inn, value, CALLER)
        check(got == want, f"{size} rows: inbound index {got} != scan {want} for {value!r}")
    out_hits = [(value, out_index.first(value)) for value in numbers]
    for value, row in out_hits:
        check(
            row is None or outbound_matches(out[row], value),
            f"{size} rows: outbound row {row} does not match {value!r}",
        )
    check(any(row is not None for _, row in out_hits), f"{size} rows: no outbound lookup hit a row")
    for value in dids:
        row = in_index.first(value, CALLER)
        if row is None:
            fail(f"{size} rows: inbound {value!r} found no row, not even the catchall")
        check(
            inbound_matches(inn[row], value, CALLER),
            f"{size} rows: inbound row {row} does not match {value!r}",
        )


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
        cold = await routing.resolve_outbound(
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
                session, tenant_id=tenant_id, did=value, from_number=CALLER
            )
        in_us = (time.perf_counter() - started) / len(dids) * 1e6
        out_index, in_index = OutboundIndex(out), InboundIndex(inn)
        check(
            cold == out_index.resolve(numbers[0], "d"),
            f"{size} rows: resolve_outbound after the change gave {cold} for {numbers[0]!r}",
        )
        for value in numbers:
            got = await routing.resolve_outbound(
                session, tenant_id=tenant_id, number=value, default_trunk_id="d"
            )
            want = out_index.resolve(value, "d")
            check(got == want, f"{size} rows: resolve_outbound {got} != index {want} for {value!r}")
        for value in dids:
            got_user = await routing.resolve_inbound(
                session, tenant_id=tenant_id, did=value, from_number=CALLER
            )
            rule = in_index.resolve(value, CALLER)
            want_user = rule.user if rule is not None else routing.CATCHALL_USER
            check(
                got_user == want_user,
                f"{size} rows: resolve_inbound {got_user!r} != index {want_user!r} for {value!r}",
            )
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
    check_index(out, inn, out_index, in_index, numbers, dids)
    oi = per_call_us(out_index.first, numbers)
    os_ = per_call_us(lambda n: first_outbound_linear(out, n), numbers[:SCANNED])
    ii = per_call_us(lambda d: in_index.first(d, CALLER), dids)
    is_ = per_call_us(lambda d: first_inbound_linear(inn, d, CALLER), dids[:SCANNED])
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
