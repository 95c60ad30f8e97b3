"""Round trips of the authenticated 50-item list, measured in-process (no server, no network).

``GET /api.ashx/v1/api-keys`` (a 50-item page) with an API key through httpx's ASGITransport,
``--requests`` sequential requests per round, rounds alternating between the previous request
path (API key looked up on every request; count and page as two statements), the key cached
alone, and the current one (key cached; count riding along the page's statement). Each ratio
is the median of per-round ratios against the old path's round, so the machine's load cancels.
Every response must be a 200 whose page is the tenant's 50 oldest keys, in order, with the total
of the 60 keys seeded (read back from the database), or the bench fails; the last response of
each round must also show each key's name, prefix and owner.

    .venv/bin/python bench/bench_list_inprocess.py [--requests 300] [--rounds 5] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bench_api import prepare
from report import check, fail, scratch_postgres
from switchboard.app import create_app
from switchboard.identity import service as identity
from switchboard.kit import paging
from switchboard.platform.apikeys import endpoints as apikeys_endpoints
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

NEW_PAGE = paging.page_with_total
KEYS = 60  # ``prepare``'s key and ``more_keys``'s 59: more than the page of 50
PAGE = 50


async def two_statement_page(
    session: AsyncSession, stmt: Select[Any], *, limit: int, offset: int
) -> tuple[list[Any], int]:
    """The previous form: a count query, then the page."""
    count = select(func.count()).select_from(stmt.order_by(None).subquery())
    total = (await session.execute(count)).scalar_one()
    rows = (await session.execute(stmt.limit(limit).offset(offset))).all()
    return list(rows), int(total)


MODES = {"old": (False, False), "cached key": (True, False), "new": (True, True)}


def use(runtime: Runtime, mode: str, ttl: float) -> None:
    """``mode``: key cache on or off, count in the page's statement or in its own."""
    cached, one_statement = MODES[mode]
    cache = runtime.authenticator._api_keys
    cache.ttl = ttl if cached else 0.0
    cache._entries.clear()
    page = NEW_PAGE if one_statement else two_statement_page
    apikeys_endpoints.page_with_total = page  # type: ignore[attr-defined]


async def round_of(
    client: httpx.AsyncClient, headers: dict[str, str], n: int, expected: list[dict[str, str]]
) -> float:
    """``n`` list requests per second; every answer must be the expected page and total."""
    ids = [item["id"] for item in expected]
    started = time.perf_counter()
    for _ in range(n):
        response = await client.get(f"/api.ashx/v1/api-keys?limit={PAGE}", headers=headers)
        if response.status_code != 200:
            fail(f"bad response {response.status_code}: {response.text[:200]}")
        page = response.json()
        if page["total"] != KEYS or [item["id"] for item in page["data"]] != ids:
            fail(f"not the tenant's first {PAGE} of {KEYS} keys: {response.text[:300]}")
    rate = n / (time.perf_counter() - started)
    check_page(page, expected)
    return rate


def check_page(page: dict[str, Any], expected: list[dict[str, str]]) -> None:
    """Every item of the page is the expected key, as the list shows it, and the envelope."""
    for got, want in zip(page["data"], expected, strict=True):
        shown = {field: got[field] for field in want}
        check(shown == want, f"key {shown} where {want} was due")
        check(got["revokedAtUtc"] is None and bool(got["createdAtUtc"]), f"key {got}")
    check((page["limit"], page["offset"]) == (PAGE, 0), f"page {page['limit']} {page['offset']}")
    check(page["next"] is not None, "no next page before the last keys")


async def first_page(runtime: Runtime) -> list[dict[str, str]]:
    """The bench tenant's keys as the database holds them: all seeded, the oldest 50 listed."""
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "bench")
        keys = await identity.list_api_keys(session, tenant_id=tenant.id)
    check(len(keys) == KEYS, f"{len(keys)} API keys stored, not {KEYS}")
    return [
        {"id": key.id, "name": key.name, "prefix": key.prefix, "createdBy": username}
        for key, username in keys[:PAGE]
    ]


async def more_keys(runtime: Runtime, count: int) -> None:
    """More API keys than a page (``prepare`` makes one), so the list serves 50 and counts."""
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "bench")
        user = await identity.get_user(session, tenant_id=tenant.id, username="admin")
        for n in range(count):
            await identity.create_api_key(
                session, tenant_id=tenant.id, user=user, name=f"bench {n}", clock=runtime.clock
            )


async def measure(settings: Settings, requests: int, rounds: int) -> dict[str, list[float]]:
    key, _ = await prepare(settings)
    runtime = Runtime(settings)
    await more_keys(runtime, KEYS - 1)
    expected = await first_page(runtime)
    app = create_app(runtime=runtime)
    headers = {"Authorization": f"Bearer {key}"}
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    async with runtime.lifespan():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            for mode in MODES:  # warm every path
                use(runtime, mode, settings.api_key_cache_seconds)
                await round_of(client, headers, 20, expected)
            for _ in range(rounds):
                for mode in MODES:
                    use(runtime, mode, settings.api_key_cache_seconds)
                    rates[mode].append(await round_of(client, headers, requests, expected))
    await runtime.db.dispose()
    return rates


def run(database_url: str, requests: int, rounds: int) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="sb-bench-"))
    settings = Settings(
        data_dir=workdir, database_url=database_url, public_base_url="http://127.0.0.1",
        run_workers=False,
    )  # fmt: skip
    rates = asyncio.run(measure(settings, requests, rounds))
    backend = "postgresql" if database_url else "sqlite"
    for mode, values in rates.items():
        median = statistics.median(values)
        ratio = statistics.median(v / o for v, o in zip(values, rates["old"], strict=True))
        rounds_text = " ".join(str(round(v)) for v in values)
        print(f"{backend} {mode:>10}: {median:5.0f} req/s  x{ratio:.2f}  ({rounds_text})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--postgres", default="", help="postgresql+asyncpg URL (else SQLite)")
    args = parser.parse_args()
    check(args.requests >= 1 and args.rounds >= 1, "--requests and --rounds must be at least 1")
    if not args.postgres:
        run("", args.requests, args.rounds)
        return
    with scratch_postgres(args.postgres) as url:
        run(url, args.requests, args.rounds)


if __name__ == "__main__":
    main()
