"""The statistics endpoint over 100,000 linen sheets, on SQLite and PostgreSQL.

Seeds one tenant with 60 properties in 6 groups, 3 laundries, 4 item types and N sheets (three
lines each, spread over 2025-2026, in every state), then times
``GET /api/v1/statistics?groupBy=...`` for each grouping through the real application (ASGI
transport, an admin OIDC token). The database does the aggregation: grouped queries only.
The bench fails unless every sheet and line was stored, every request answered 200 with the same
body, and that body is the page of rows the seeded sheets give (counts, weights, items, costs,
labels, order and total), tallied here while seeding.

    .venv/bin/python bench/bench_linen.py [--sheets 100000] [--repeat 5] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, insert, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from report import check, fail
from switchboard.app import create_app
from switchboard.identity import clients
from switchboard.identity import service as identity
from switchboard.kit.models import Base
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
COUNTED = ("confirmed", "delivered", "invoiced")  # the states the statistics count
GROUPINGS = ("month", "property", "laundry", "group")
DATE_FROM, DATE_TO = "2025-01-01", "2026-12-31"
PAGE = 50  # the endpoint's default page size


# The seeded catalogue's names, which the statistics rows show again as keys' labels.
def item_code(i: int) -> str:
    return f"ITEM_{i}"


def laundry_name(i: int) -> str:
    return f"Laundry {i}"


def group_name(i: int) -> str:
    return f"Group {i}"


def property_code(i: int) -> str:
    return f"P{i:03d}"


def property_name(i: int) -> str:
    return f"Property {i}"


@dataclasses.dataclass
class Tally:
    """What one statistics row must show: its counted sheets, their grams, cost and items."""

    sheets: int = 0
    grams: int = 0
    cost: int = 0
    items: dict[int, int] = dataclasses.field(default_factory=dict)


def expected_pages(tallies: dict[str, dict[int | str, Tally]]) -> dict[str, dict[str, Any]]:
    """Per grouping, the first page the endpoint must answer: its rows as JSON and the total."""
    labels = {
        "property": lambda k: f"{property_code(int(k))} {property_name(int(k))}",
        "laundry": lambda k: laundry_name(int(k)),
        "group": lambda k: group_name(int(k)),
    }
    pages = {}
    for group_by, keyed in tallies.items():
        rows: list[dict[str, Any]] = [
            {
                "period": str(key) if group_by == "month" else f"{DATE_FROM}/{DATE_TO}",
                "key": str(key),
                "label": labels[group_by](key) if group_by in labels else str(key),
                "sheets": tally.sheets,
                "itemsByType": [
                    {"itemTypeId": item, "code": item_code(item), "qty": qty}
                    for item, qty in sorted(tally.items.items())
                ],
                "weightKg": tally.grams / 1000,
                "estimatedCost": [{"amount": tally.cost, "currency": "EUR"}],
                "invoicedCost": [],
            }
            for key, tally in keyed.items()
        ]
        if group_by == "month":
            rows.sort(key=lambda r: r["key"])
        else:
            rows.sort(key=lambda r: (r["label"], int(r["key"])))
        pages[group_by] = {"data": rows[:PAGE], "total": len(rows)}
    return pages


def check_page(group_by: str, body: dict[str, Any], expected: dict[str, Any]) -> None:
    """The answered page is the expected one, row for row, with the envelope around it."""
    where = f"groupBy={group_by}"
    total = expected["total"]
    check(body["total"] == total, f"{where}: total {body['total']}, not {total}")
    rows = len(expected["data"])
    check(len(body["data"]) == rows, f"{where}: {len(body['data'])} rows, not {rows}")
    for got, want in zip(body["data"], expected["data"], strict=True):
        check(got == want, f"{where}: row {got} where {want} was due")
    check(
        (body["groupBy"], body["dateFrom"], body["dateTo"]) == (group_by, DATE_FROM, DATE_TO),
        f"{where}: answered for {body['groupBy']} {body['dateFrom']}..{body['dateTo']}",
    )
    check((body["limit"], body["offset"]) == (PAGE, 0), f"{where}: page {body['limit']}")
    check((body["next"] is None) == (expected["total"] <= PAGE), f"{where}: next {body['next']}")


async def seed(runtime: Runtime, sheets: int) -> dict[str, dict[str, Any]]:
    """Seed the tenant and return, per grouping, the page the statistics must answer."""
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
    tallies: dict[str, dict[int | str, Tally]] = {group_by: {} for group_by in GROUPINGS}
    async with runtime.db.engine.begin() as conn:
        stamp = {"created_at": now, "updated_at": now, "tenant_id": tenant_id}
        await conn.execute(
            insert(ItemType),
            [
                {"id": i, "code": item_code(i), "name": f"Item {i}", "category": "bed",
                 "unit": "piece", "weight_grams": 300 * i, "active": True, "components": [],
                 **stamp}
                for i in range(1, 5)
            ],
        )  # fmt: skip
        await conn.execute(
            insert(Laundry),
            [{"id": i, "name": laundry_name(i), "address": {}, **stamp} for i in range(1, 4)],
        )
        await conn.execute(
            insert(PropertyGroup),
            [{"id": i, "name": group_name(i), "kind": "region", **stamp} for i in range(1, 7)],
        )
        await conn.execute(
            insert(Property),
            [
                {"id": i, "code": property_code(i), "name": property_name(i), "address": {},
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
            tally(tallies, rows, lines)
        if runtime.db.dialect == "postgresql":
            await conn.execute(text("ANALYZE"))
        stored = [
            (await conn.execute(select(func.count()).select_from(model))).scalar_one()
            for model in (LinenSheet, SheetLine)
        ]
        check(
            stored == [sheets, 3 * sheets],
            f"{stored[0]} sheets and {stored[1]} lines stored, not {sheets} and {3 * sheets}",
        )
    return expected_pages(tallies)


def tally(
    tallies: dict[str, dict[int | str, Tally]],
    rows: list[dict[str, Any]],
    lines: list[dict[str, Any]],
) -> None:
    """Add one batch of sheets to the rows of every grouping that counts them."""
    counted = {row["id"]: row for row in rows if row["status"] in COUNTED}
    keys: dict[int, list[tuple[str, int | str]]] = {}
    for n, row in counted.items():
        keys[n] = [
            ("month", row["service_date"].strftime("%Y-%m")),
            ("property", row["property_id"]),
            ("laundry", row["laundry_id"]),
            ("group", 1 + row["property_id"] % 6),
        ]
        for group_by, key in keys[n]:
            found = tallies[group_by].setdefault(key, Tally())
            found.sheets += 1
            found.grams += row["weight_grams"]
            found.cost += row["estimated_cost"]
    for line in lines:
        sheet = counted.get(line["sheet_id"])
        if sheet is None:
            continue
        qty = line["qty_ordered"] if sheet["status"] == "confirmed" else line["qty_delivered"]
        for group_by, key in keys[line["sheet_id"]]:
            items = tallies[group_by][key].items
            items[line["item_type_id"]] = items.get(line["item_type_id"], 0) + qty


async def run(url: str, label: str, sheets: int, repeat: int) -> None:
    settings = Settings(
        database_url=url, public_base_url=f"http://{HOST}", secret_key=SECRET, run_workers=False
    )
    runtime = Runtime(settings)
    began = time.perf_counter()
    expected = await seed(runtime, sheets)
    seeded = time.perf_counter() - began
    app = create_app(runtime=runtime)
    async with runtime.lifespan():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{HOST}") as client:
            granted = await client.post(
                "/oidc.ashx/token",
                data={
                    "grant_type": "password",
                    "client_id": "cli",
                    "username": "admin",
                    "password": PASSWORD,
                    "scope": "openid",
                },
            )
            check(granted.status_code == 200, f"token: {granted.status_code} {granted.text}")
            headers = {"Authorization": f"Bearer {granted.json()['access_token']}"}
            print(f"{label}: {sheets} sheets seeded in {seeded:.1f} s")
            for group_by in GROUPINGS:
                params = {"groupBy": group_by, "from": DATE_FROM, "to": DATE_TO}
                timings = []
                first = b""
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    response = await client.get(
                        "/api/v1/statistics", params=params, headers=headers
                    )
                    timings.append(time.perf_counter() - t0)
                    if response.status_code != 200:
                        fail(f"groupBy={group_by}: {response.status_code} {response.text[:300]}")
                    first = first or response.content
                    check(response.content == first, f"groupBy={group_by}: answers differ")
                body = response.json()
                check_page(group_by, body, expected[group_by])
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
    check(args.sheets >= 1 and args.repeat >= 1, "--sheets and --repeat must be at least 1")
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        asyncio.run(run(url, "SQLite", args.sheets, args.repeat))
    if args.postgres:
        asyncio.run(with_postgres(args.postgres, args.sheets, args.repeat))


if __name__ == "__main__":
    main()
