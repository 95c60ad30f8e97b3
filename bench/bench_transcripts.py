"""``GET /api.ashx/v1/transcripts?q=`` at 1,000,000 transcripts, on SQLite and PostgreSQL.

Loads N index rows in bulk (SQLite: one ``executemany`` transaction, then an FTS5 ``rebuild``;
PostgreSQL: ``COPY``, then the ``pg_trgm`` GIN index is built), prints the query plans of the
``q`` search to show the index in use, then times the endpoint in-process (httpx ASGI
transport, API-key bearer) for a rare substring, a common one, a two-character one (below the
trigram length: a scan by design) and the unfiltered first page.

    .venv/bin/python bench/bench_transcripts.py [--rows 1000000] [--requests 20]
        [--postgres postgresql+asyncpg://127.0.0.1:5432/test] [--skip-sqlite]

The PostgreSQL run creates and drops its own database on that server.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime as dt
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from report import check, percentile, record
from switchboard.app import create_app
from switchboard.identity import service as identity
from switchboard.models import Base
from switchboard.platform.transcripts import repository
from switchboard.platform.transcripts.service import parse_filter
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

FIRST = ["Anna", "Ben", "Clara", "David", "Eva", "Felix", "Greta", "Hugo", "Ida", "Jonas"]
LAST = ["Smith", "Meyer", "Jones", "Schulz", "Brown", "Wagner", "Lopez", "Novak", "Rossi", "Kim"]
RULES = ["Renewals", "Front desk", "Support", "Collections", "Surveys", "After hours"]
RARE = "zq-4711"  # planted in 20 rows
QUERIES = [("rare", RARE), ("common", "smith"), ("two chars", "zq"), ("no q", "")]
T0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
COLUMNS = (
    "id", "tenant_id", "call_id", "caller_source", "requested_by", "phone", "display_name",
    "email", "number", "rule", "voice", "language", "model", "trunk_id", "started_at",
    "answered_at", "ended_at", "saved_at", "duration_sec", "outcome", "error_detail",
    "tokens_prompt", "tokens_total", "input_turns", "output_turns", "turn_count", "size", "file",
    "search_text",
)  # fmt: skip


def rows(n: int, tenant_id: int, *, naive: bool) -> Iterator[tuple[Any, ...]]:
    rng = random.Random(7)
    rare = set(rng.sample(range(n), 20))
    for i in range(n):
        started = T0 + dt.timedelta(seconds=30 * i)
        if naive:
            started = started.replace(tzinfo=None)
        ended = started + dt.timedelta(seconds=90)
        outbound = i % 3 != 0
        phone = f"+49{rng.randrange(10**9, 10**10)}"
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}" + (f" {RARE}" if i in rare else "")
        number = "" if outbound else str(200 + i % 50)
        rule = rng.choice(RULES)
        display = name if outbound else ""
        search = "\n".join((phone, number, display, rule)).lower()
        yield (
            i + 1, tenant_id, f"oac-{i:012x}" if outbound else f"vnum-{i:x}",
            "outbound-ai" if outbound else "vnum", "admin", phone, display, "ops@bench.test",
            number, rule, "Aoede", "en-US", "gemini-live-2.5-flash", "trunk-a", started,
            started, ended, ended, 90, "finished", "", 100, 800, 6, 6, 12, 2400,
            f"t-{i}.json", search,
        )  # fmt: skip


async def prepare_schema(settings: Settings) -> tuple[int, str]:
    """Schema, one tenant with an admin, and an API key for the requests."""
    runtime = Runtime(settings)
    async with runtime.db.engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    async with runtime.db.transaction() as session:
        tenant = await tenants.create_tenant(
            session, name="bench", domains=["bench.test"], clock=runtime.clock, box=runtime.box
        )
        user = await identity.create_user(
            session, tenant=tenant, username="admin", password="bench-password-1",
            role="admin", clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        _, key = await identity.create_api_key(
            session, tenant_id=tenant.id, user=user, name="bench", clock=runtime.clock
        )
    await runtime.db.dispose()
    return tenant.id, key


def load_sqlite(path: Path, n: int, tenant_id: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    triggers = [r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE type='trigger'")]
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    marks = ",".join("?" * len(COLUMNS))
    with conn:
        conn.executemany(
            f"INSERT INTO transcripts ({','.join(COLUMNS)}) VALUES ({marks})",  # noqa: S608
            rows(n, tenant_id, naive=True),
        )
    with conn:
        conn.execute("INSERT INTO transcripts_fts(transcripts_fts) VALUES ('rebuild')")
        for sql in triggers:
            conn.execute(sql)
    conn.execute("ANALYZE")
    conn.close()


async def load_postgres(url: str, n: int, tenant_id: int) -> None:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        await conn.execute("DROP INDEX ix_transcripts_search_trgm")
        await conn.copy_records_to_table(
            "transcripts", records=rows(n, tenant_id, naive=False), columns=COLUMNS
        )
        await conn.execute("SET maintenance_work_mem = '512MB'")
        await conn.execute(
            "CREATE INDEX ix_transcripts_search_trgm ON transcripts "
            "USING gin (search_text gin_trgm_ops)"
        )
        await conn.execute("VACUUM (ANALYZE) transcripts")
    finally:
        await conn.close()


def expected(n: int) -> dict[str, tuple[int, bool, list[str]]]:
    """Per query: the total the first page must show, whether it is capped, and its call ids.

    Computed from the generated rows alone (start times grow with the row number), so the
    bench fails if the endpoint answers anything else.
    """
    found: dict[str, tuple[int, collections.deque[str]]] = {}
    for _, q in QUERIES:
        found[q] = (0, collections.deque(maxlen=50))
    for row in rows(n, 0, naive=True):
        i, call_id, search = row[0] - 1, row[2], row[-1]
        for q, (count, newest) in found.items():
            if repository.is_short(q) and i < n - repository.SHORT_QUERY_WINDOW:
                continue
            if q in search:
                newest.append(call_id)
                found[q] = (count + 1, newest)
    answers = {}
    for q, (count, newest) in found.items():
        capped = count > repository.TOTAL_CAP
        answers[q] = (repository.TOTAL_CAP if capped else count, capped, list(reversed(newest)))
    return answers


async def explain(url: str, tenant_id: int, q: str) -> list[str]:
    """The plans of the statements the endpoint may run for ``q`` (docs/decisions/0402)."""
    engine = create_async_engine(url)
    dialect = engine.dialect
    query = parse_filter(source=None, q=q, since=None)
    statements = [
        (statement.__name__, statement(tenant_id, query, dialect.name, limit=50, offset=0))
        for statement in (
            repository.capped_statement,
            repository.walk_statement,
            repository.sorted_statement,
        )
    ]
    prefix = "EXPLAIN QUERY PLAN " if dialect.name == "sqlite" else "EXPLAIN "
    lines = []
    async with engine.connect() as conn:
        for label, stmt in statements:
            sql = str(stmt.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
            lines.append(f"{label}:")
            lines += [f"  {row[-1]}" for row in await conn.execute(text(prefix + sql))]
    await engine.dispose()
    return lines


async def measure(
    settings: Settings, key: str, requests: int, answers: dict[str, tuple[int, bool, list[str]]]
) -> list[tuple[str, int, float, float, float]]:
    runtime = Runtime(settings)
    app = create_app(runtime=runtime)
    results = []
    async with runtime.lifespan():
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {key}", "Host": "bench.test"}
        async with httpx.AsyncClient(transport=transport, base_url="http://bench.test") as client:
            for label, q in QUERIES:
                params = {"q": q} if q else {}
                timings = []
                total = 0
                for attempt in range(requests + 2):
                    start = time.perf_counter()
                    response = await client.get(
                        "/api.ashx/v1/transcripts", params=params, headers=headers
                    )
                    elapsed = (time.perf_counter() - start) * 1000
                    check(response.status_code == 200, f"q={q!r}: {response.text[:300]}")
                    page = response.json()
                    total = page["total"]
                    answer = (
                        total,
                        page.get("totalCapped", False),
                        [i["callId"] for i in page["data"]],
                    )
                    check(answer == answers[q], f"q={q!r}: wrong page or total {answer[:2]}")
                    if attempt >= 2:  # two warm-up requests
                        timings.append(elapsed)
                timings.sort()
                p95, p99 = percentile(timings, 0.95), percentile(timings, 0.99)
                results.append((label, total, statistics.median(timings), p95, p99))
    return results


async def run_backend(name: str, settings: Settings, n: int, requests: int) -> None:
    url = settings.resolved_database_url
    tenant_id, key = await prepare_schema(settings)
    start = time.perf_counter()
    if name == "sqlite":
        await asyncio.to_thread(load_sqlite, Path(url.split("///", 1)[1]), n, tenant_id)
    else:
        await load_postgres(url, n, tenant_id)
    print(f"\n## {name}: loaded {n:,} transcripts in {time.perf_counter() - start:.1f} s")
    for label, q in (("rare", RARE), ("two chars", "zq")):
        print(f"plan for q={q!r} ({label}):")
        for line in await explain(url, tenant_id, q):
            print(f"    {line}")
    answers = await asyncio.to_thread(expected, n)
    print("| query | total | median ms | p95 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|")
    for label, total, median, p95, p99 in await measure(settings, key, requests, answers):
        print(f"| {label} | {total:,} | {median:.1f} | {p95:.1f} | {p99:.1f} |")
        if label in ("rare", "common") and n == 1_000_000:
            backend = "sqlite" if name == "sqlite" else "postgresql"
            record(f"transcripts.{label}_p99.{backend}", p99)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--postgres", default="postgresql+asyncpg://127.0.0.1:5432/test")
    parser.add_argument("--skip-sqlite", action="store_true")
    args = parser.parse_args()
    common: dict[str, Any] = {
        "secret_key": "bench-secret-key-with-at-least-32-characters",
        "run_workers": False,
        "log_level": "WARNING",
    }
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_sqlite:
            settings = Settings(
                database_url=f"sqlite+aiosqlite:///{tmp}/bench.db", data_dir=Path(tmp), **common
            )
            await run_backend("sqlite", settings, args.rows, args.requests)
        if args.postgres:
            name = f"sb_bench_{uuid.uuid4().hex[:8]}"
            admin = create_async_engine(args.postgres, isolation_level="AUTOCOMMIT")
            async with admin.connect() as conn:
                await conn.execute(text(f'CREATE DATABASE "{name}"'))
            try:
                url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
                settings = Settings(database_url=url, data_dir=Path(tmp), **common)
                await run_backend("postgres", settings, args.rows, args.requests)
            finally:
                async with admin.connect() as conn:
                    await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                await admin.dispose()


if __name__ == "__main__":
    asyncio.run(main())
