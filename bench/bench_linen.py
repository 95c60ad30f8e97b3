"""The statistics endpoint over 100,000 linen sheets, on SQLite and PostgreSQL.

Seeds one tenant with 60 properties in 6 groups, 3 laundries, 4 item types and N sheets (three
lines each, spread over 2025-2026, in every state), then times
``GET /api/v1/statistics?groupBy=...`` for each grouping through the real application (ASGI
transport, an admin OIDC token). The database does the aggregation: grouped queries only.

    .venv/bin/python bench/bench_linen.py [--sheets 100000] [--repeat 5] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import create_async_engine

from switchboard.app import create_app
from switchboard.identity import clients
from switchboard.identity import service as identity
from switchboard.kit.db import Base
from switchboard.linen.models import (
    GroupMember,
    ItemType,
    Laundry,
    LinenSheet,
    Property,
    PropertyGroup,
    SheetLine,
)
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

SECRET = "bench-secret-key-with-at-least-32-characters"
HOST = "bench.test"
PASSWORD = "bench password 1"
STATES = ["confirmed", "delivered", "delivered", "invoiced", "draft", "cancelled"]


async def seed(runtime: Runtime, sheets: int) -> None:
    async with runtime.db.engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    async with runtime.db.transaction() as session:
        tenant = await tenants.create_tenant(
            session, name="bench", domains=[HOST], clock=runtime.clock, box=runtime.box
        )
        await identity.create_user(
            session, tenant=tenant, username="admin", password=PASSWORD, role="admin",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        await clients.create_client(session, tenant=tenant, client_id="cli", clock=runtime.clock)
        tenant_id = tenant.id
    now = runtime.clock.now()
    rng = random.Random(7)
    async with runtime.db.engine.begin() as conn:
        stamp = {"created_at": now, "updated_at": now, "tenant_id": tenant_id}
        await conn.execute(
            insert(ItemType),
            [
                {"id": i, "code": f"ITEM_{i}", "name": f"Item {i}", "category": "bed",
                 "unit": "piece", "weight_grams": 300 * i, "active": True, "components": [],
                 **stamp}
                for i in range(1, 5)
            ],
        )  # fmt: skip
        await conn.execute(
            insert(Laundry),
            [{"id": i, "name": f"Laundry {i}", "address": {}, **stamp} for i in range(1, 4)],
        )
        await conn.execute(
            insert(PropertyGroup),
            [{"id": i, "name": f"Group {i}", "kind": "region", **stamp} for i in range(1, 7)],
        )
        await conn.execute(
            insert(Property),
            [
                {"id": i, "code": f"P{i:03d}", "name": f"Property {i}", "address": {},
                 "beds": [], "linen_par": [], "default_laundry_id": 1 + i % 3, **stamp}
                for i in range(1, 61)
            ],
        )  # fmt: skip
        await conn.execute(
            insert(GroupMember),
            [{"group_id": 1 + i % 6, "property_id": i, "tenant_id": tenant_id}
             for i in range(1, 61)],
        )  # fmt: skip
        start = dt.date(2025, 1, 1)
        batch = 10_000
        for offset in range(0, sheets, batch):
            rows, lines = [], []
            for n in range(offset + 1, min(offset + batch, sheets) + 1):
                status = STATES[n % len(STATES)]
                rows.append(
                    {"id": n, "tenant_id": tenant_id, "number": f"LS-2026-{n:06d}", "year": 2026,
                     "seq": n, "property_id": 1 + n % 60, "laundry_id": 1 + n % 3,
                     "service_date": start + dt.timedelta(days=rng.randrange(730)),
                     "reason": "turnover", "status": status,
                     "confirmed_at": now if status != "draft" else None,
                     "weight_grams": rng.randrange(1000, 9000),
                     "estimated_cost": rng.randrange(1000, 9000), "currency": "EUR",
                     "created_at": now, "updated_at": now}
                )  # fmt: skip
                for item in (1, 2, 3):
                    qty = rng.randrange(1, 6)
                    lines.append(
                        {"tenant_id": tenant_id, "sheet_id": n, "item_type_id": item,
                         "qty_ordered": qty, "qty_delivered": qty, "qty_collected": qty,
                         "qty_rejected": 0, "note": ""}
                    )  # fmt: skip
            await conn.execute(insert(LinenSheet), rows)
            await conn.execute(insert(SheetLine), lines)
        if runtime.db.dialect == "postgresql":
            await conn.execute(text("ANALYZE"))


async def run(url: str, label: str, sheets: int, repeat: int) -> None:
    settings = Settings(
        database_url=url, public_base_url=f"http://{HOST}", secret_key=SECRET, run_workers=False
    )
    runtime = Runtime(settings)
    began = time.perf_counter()
    await seed(runtime, sheets)
    seeded = time.perf_counter() - began
    app = create_app(runtime=runtime)
    async with runtime.lifespan():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{HOST}") as client:
            token = (
                await client.post(
                    "/oidc.ashx/token",
                    data={
                        "grant_type": "password",
                        "client_id": "cli",
                        "username": "admin",
                        "password": PASSWORD,
                        "scope": "openid",
                    },
                )
            ).json()["access_token"]
            headers = {"Authorization": f"Bearer {token}"}
            print(f"{label}: {sheets} sheets seeded in {seeded:.1f} s")
            for group_by in ("month", "property", "laundry", "group"):
                params = {"groupBy": group_by, "from": "2025-01-01", "to": "2026-12-31"}
                timings = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    response = await client.get(
                        "/api/v1/statistics", params=params, headers=headers
                    )
                    timings.append(time.perf_counter() - t0)
                    assert response.status_code == 200, response.text
                body = response.json()
                counted = sum(row["sheets"] for row in body["data"])
                print(
                    f"  groupBy={group_by:<8} rows={body['total']:<3} sheets counted={counted:<6}"
                    f" median {statistics.median(timings) * 1000:7.1f} ms"
                    f"  min {min(timings) * 1000:7.1f} ms"
                )


async def with_postgres(url: str, sheets: int, repeat: int) -> None:
    name = f"bench_linen_{uuid.uuid4().hex[:8]}"
    admin = create_async_engine(url, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        await run(f"{url.rpartition('/')[0]}/{name}", "PostgreSQL", sheets, repeat)
    finally:
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sheets", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--postgres", default="postgresql+asyncpg://127.0.0.1:5432/test")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        asyncio.run(run(url, "SQLite", args.sheets, args.repeat))
    if args.postgres:
        asyncio.run(with_postgres(args.postgres, args.sheets, args.repeat))


if __name__ == "__main__":
    main()
