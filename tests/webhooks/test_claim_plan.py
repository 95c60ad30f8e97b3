"""On PostgreSQL a claim reads the oldest due deliveries by index and stops at its limit,
whatever the statistics say of how many are pending (decision 0216)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any, cast

import asyncpg
import pytest
from sqlalchemy import Table, text
from sqlalchemy.engine import make_url

from switchboard.kit.driver import Runner, Statements
from switchboard.platform.webhooks import queue
from switchboard.platform.webhooks.models import Delivery
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.pgstats import rows_read
from tests.webhooks.conftest import subscribe

HISTORY = 4000  # finished deliveries, none pending, when statistics are taken
BACKLOG = 3000  # then pending ones pile up (a receiver down), unknown to the statistics

_ROWS = """
INSERT INTO webhook_deliveries (id, tenant_id, subscription_id, event, body, status, attempts,
    created_at, next_attempt_at, order_key, seq)
SELECT md5(g::text), $1, $2, 'call.started', '\\x7b7d', $3, 0, now(), now() + g * interval '1 ms',
    'call-' || (g / 2), g
FROM generate_series($4::int, $5::int) AS g
"""


def _literal(value: object) -> str:
    if isinstance(value, int):
        return str(value)
    text = value.isoformat() if isinstance(value, dt.datetime) else str(value)
    return "'" + text.replace("'", "''") + "'"


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(node for child in plan.get("Plans", ()) for node in _nodes(child))]


async def test_a_backlog_unknown_to_the_statistics_is_claimed_by_index(
    runtime: Runtime, org: TenantFixture
) -> None:
    if runtime.db.dialect != "postgresql":
        pytest.skip("SQLite's claim has no statistics to be misled by")
    sub, _ = await subscribe(runtime, org, "http://127.0.0.1:9/hook")
    url = make_url(runtime.settings.database_url).set(drivername="postgresql")
    conn = await asyncpg.connect(url.render_as_string(hide_password=False))
    try:
        await conn.execute(_ROWS, org.id, sub, "succeeded", 1, HISTORY)
        await conn.execute("ANALYZE webhook_deliveries")
        await conn.execute(_ROWS, org.id, sub, "pending", HISTORY + 1, HISTORY + BACKLOG)
        stmt = queue._due_statement(excluding=False, postgres=True)
        compiled = Statements(runtime.db.engine.dialect).compile(stmt)
        now = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
        args = compiled.arguments({"now": now, "limit": 128})
        async with conn.transaction():
            # Planned as a statement prepared once and run many times: its parameters unknown,
            # so only a literal condition can choose the partial due index (decision 0220).
            await conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            await conn.execute(f"PREPARE claim AS {compiled.sql}")
            values = ", ".join(_literal(arg) for arg in args)
            explained = await conn.fetchval(
                f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claim({values})"
            )
    finally:
        await conn.close()
    [root] = json.loads(explained)
    nodes = _nodes(root["Plan"])
    scans = {(n["Node Type"], n.get("Index Name"), n.get("Actual Rows")) for n in nodes}
    # The due rows come in index order, as many as the limit asks (not the whole backlog) ...
    assert ("Index Scan", "ix_webhook_deliveries_due", 128) in scans
    # ... and whether an earlier delivery of the call is pending is asked of the call's rows.
    earlier = [n for n in nodes if n.get("Alias") == "earlier"]
    assert {n.get("Index Name") for n in earlier} == {"ix_webhook_deliveries_order"}
    read = sum((n["Actual Rows"] + n.get("Rows Removed by Filter", 0)) * n["Actual Loops"]
               for n in nodes)  # fmt: skip
    assert read < BACKLOG


# Rows of about a kilobyte, as the bench's events (a page holds three at fillfactor 50).
_WIDE_ROWS = _ROWS.replace("'\\x7b7d'", "convert_to(repeat('x', 1000), 'UTF8')")


async def test_a_table_never_analyzed_is_claimed_by_index(
    runtime: Runtime, org: TenantFixture
) -> None:
    """A new deployment's table, filled before autovacuum first analyzed it: the claim as the
    sender runs it (its first run on the connection, which PostgreSQL would plan with the values
    and no statistics) reads the oldest due rows by index, not the whole backlog (decision
    0224)."""
    if runtime.db.dialect != "postgresql":
        pytest.skip("SQLite's claim has no statistics to be misled by")
    sub, _ = await subscribe(runtime, org, "http://127.0.0.1:9/hook")
    table = cast(Table, Delivery.__table__)
    async with runtime.db.engine.begin() as setup:  # new, so never analyzed
        await setup.run_sync(table.drop)
        await setup.run_sync(table.create)
        await setup.execute(text(f"ALTER TABLE {table.name} SET (autovacuum_enabled = false)"))
    url = make_url(runtime.settings.database_url).set(drivername="postgresql")
    conn = await asyncpg.connect(url.render_as_string(hide_password=False))
    try:
        await conn.execute(_WIDE_ROWS, org.id, sub, "pending", 1, BACKLOG)
    finally:
        await conn.close()
    now = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)

    def claim(runner: Runner) -> tuple[list[str], int]:
        due = queue.due_candidates(runner, now=now, limit=128, exclude=())
        [(read,)] = runner.rows(rows_read(table.name), {})
        return [c.id for c in due], read

    try:
        due, read = await runtime.db.write_on_driver(claim)
    finally:
        async with runtime.db.engine.begin() as setup:
            await setup.execute(text(f"ALTER TABLE {table.name} RESET (autovacuum_enabled)"))
    # The first row of each call (the rows come in pairs of a call after the first) in order ...
    expected = [1, *range(2, 2 * 127 + 1, 2)]
    assert due == [
        hashlib.md5(str(g).encode(), usedforsecurity=False).hexdigest() for g in expected
    ]
    # ... reached by reading the oldest rows only: a plan made from no statistics reads every
    # pending row and each one's earlier row of its call (4,499 rows here).
    assert read < BACKLOG // 4, read


async def test_sqlite_claims_by_the_due_index_of_pending_rows(
    runtime: Runtime, org: TenantFixture
) -> None:
    """The due index holds pending rows only (decision 0220): the claim's condition shows its
    literal, so SQLite reads the oldest due rows from it rather than scanning the table."""
    if runtime.db.dialect != "sqlite":
        pytest.skip("PostgreSQL's plan is checked above, against misleading statistics")
    stmt = queue._due_statement(excluding=False, postgres=False)
    compiled = Statements(runtime.db.engine.dialect).compile(stmt)
    args = compiled.arguments({"now": dt.datetime.now(dt.UTC), "limit": 128})
    async with runtime.db.engine.connect() as conn:
        result = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled.sql}", tuple(args))
        details = [str(detail) for detail in result.scalars(3)]
    assert any("USING INDEX ix_webhook_deliveries_due" in d for d in details), details
    assert not any(d.startswith("SCAN webhook_deliveries") for d in details), details


async def test_postgresql_leases_the_rows_it_locked_where_they_lie(
    runtime: Runtime, org: TenantFixture
) -> None:
    """The claim reads each due row's place as it locks it; the lease then reaches exactly
    those rows by place, not through the key's index again (decision 0223). A table of a few
    pages is read whole instead, which costs less there; this one holds two thousand rows."""
    if runtime.db.dialect != "postgresql":
        pytest.skip("SQLite leases by key, in a transaction of its own")
    sub, _ = await subscribe(runtime, org, "http://127.0.0.1:9/hook")
    url = make_url(runtime.settings.database_url).set(drivername="postgresql")
    conn = await asyncpg.connect(url.render_as_string(hide_password=False))
    statements = Statements(runtime.db.engine.dialect)
    claim = statements.compile(queue._due_statement(excluding=False, postgres=True))
    lease = statements.compile(queue._LEASE_LOCKED)
    now = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    try:
        await conn.execute(_ROWS, org.id, sub, "pending", 1, 2000)
        async with conn.transaction():
            due = await conn.fetch(claim.sql, *claim.arguments({"now": now, "limit": 8}))
            places = [row[2] for row in due]
            args = {"places": places, "b_token": "t", "b_until": now}
            await conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            await conn.execute(f"PREPARE lease AS {lease.sql}")
            array = "{" + ",".join(f'"({block},{offset})"' for block, offset in places) + "}"
            values = ", ".join(_literal(a) for a in lease.arguments({**args, "places": array}))
            explained = await conn.fetchval(f"EXPLAIN (FORMAT JSON) EXECUTE lease({values})")
            leased = await conn.fetch(lease.sql, *lease.arguments(args))
    finally:
        await conn.close()
    [root] = json.loads(explained)
    kinds = {n["Node Type"] for n in _nodes(root["Plan"])}
    assert "Tid Scan" in kinds, kinds
    assert not any("Index" in kind for kind in kinds), kinds
    assert len(due) == 8
    assert sorted(row["id"] for row in leased) == sorted(row[0] for row in due)
