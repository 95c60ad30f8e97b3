"""The Alembic migrations build exactly the schema the models describe, on every backend."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from switchboard.kit.models import watched
from switchboard.migrate import upgrade
from switchboard.models import Base
from switchboard.platform.webhooks.models import FILLFACTOR
from tests.conftest import BACKENDS, PG_URL


def _include_object(dialect: str) -> Any:
    """Search side objects are backend-specific and managed by hand in the revisions: SQLite's
    FTS5 tables, and the trigram index that the models declare for PostgreSQL only."""

    def include(obj: Any, name: str | None, type_: str, _reflected: bool, _other: Any) -> bool:
        if type_ == "table" and name is not None and name.startswith("transcripts_fts"):
            return False
        return not (dialect != "postgresql" and name == "ix_transcripts_search_trgm")

    return include


@pytest.fixture(params=BACKENDS)
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
        return
    name = f"sb_migr_{uuid.uuid4().hex[:10]}"

    async def admin(sql: str) -> None:
        engine = create_async_engine(PG_URL, isolation_level="AUTOCOMMIT")
        async with engine.connect() as conn:
            await conn.execute(text(sql))
        await engine.dispose()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield PG_URL.rpartition("/")[0] + f"/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def run_sql(url: str, statements: list[str]) -> list[Any]:
    """Run ``statements`` in one transaction, with foreign keys enforced as the application's
    connections do; the rows of the last."""

    async def run() -> list[Any]:
        engine = create_async_engine(url)
        async with engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                await conn.execute(text("PRAGMA foreign_keys=ON"))
            for statement in statements:
                result = await conn.execute(text(statement))
            rows = list(result.all()) if result.returns_rows else []
            await conn.commit()
        await engine.dispose()
        return rows

    return asyncio.run(run())


def test_migrations_match_the_models(empty_database: str) -> None:
    upgrade(empty_database)

    def diff(connection: Connection) -> list[Any]:
        include = _include_object(connection.dialect.name)
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "include_object": include}
        )
        return list(compare_metadata(context, Base.metadata))

    async def run() -> list[Any]:
        engine = create_async_engine(empty_database)
        async with engine.connect() as conn:
            result = await conn.run_sync(diff)
        await engine.dispose()
        return result

    assert asyncio.run(run()) == []


def test_downgrade_to_base_and_back(empty_database: str) -> None:
    from alembic import command

    from switchboard.migrate import alembic_config

    upgrade(empty_database)
    command.downgrade(alembic_config(empty_database), "base")
    upgrade(empty_database)


def test_a_migrated_database_serves_transcript_search(empty_database: str, tmp_path: Path) -> None:
    """The search objects the revisions create by hand really work."""
    from httpx import ASGITransport, AsyncClient

    from switchboard.app import create_app
    from switchboard.platform.transcripts.service import save_transcript
    from switchboard.runtime import Runtime
    from switchboard.settings import Settings
    from tests import factories
    from tests.conftest import PRIMARY_HOST, TEST_SECRET
    from tests.transcripts.helpers import outbound

    upgrade(empty_database)
    settings = Settings(
        database_url=empty_database,
        data_dir=tmp_path,
        public_base_url=f"http://{PRIMARY_HOST}",
        secret_key=TEST_SECRET,
        run_workers=False,
        argon2_time_cost=1,
        argon2_memory_kib=64,
        argon2_parallelism=1,
    )

    async def run() -> list[str]:
        runtime = Runtime(settings)
        tenant = await factories.tenant(runtime, "acme", [PRIMARY_HOST])
        key = await factories.api_key(runtime, tenant)
        async with runtime.db.transaction() as session:
            for call_id, name in (
                ("oac-00000000000a", "Dana Quigley"),
                ("oac-00000000000b", "Lee"),
            ):
                await save_transcript(
                    session, tenant_id=tenant.id, tenant_name="acme",
                    data=outbound(call_id, display_name=name), data_dir=tmp_path,
                    clock=runtime.clock,
                )  # fmt: skip
        app = create_app(runtime=runtime)
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url=f"http://{PRIMARY_HOST}") as client:
            response = await client.get(
                "/api.ashx/v1/transcripts?q=quig", headers={"Authorization": f"Bearer {key}"}
            )
        await runtime.db.dispose()
        return [item["callId"] for item in response.json()["data"]]

    assert asyncio.run(run()) == ["oac-00000000000a"]


def test_every_migrated_table_notifies_its_changes(empty_database: str) -> None:
    """The read cache learns of other processes' writes by notification (decision 0960): a
    revision that adds a table must add its trigger (``kit.changes.notify_trigger_sql``), unless
    the model marks the table unwatched (``kit.models.UNWATCHED``, decision 0217)."""
    if not empty_database.startswith("postgresql"):
        pytest.skip("SQLite's data version needs no trigger")
    upgrade(empty_database)
    tables_sql = "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
    triggers_sql = (
        "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
        " WHERE t.tgname = 'switchboard_changes'"
    )

    async def run() -> tuple[set[str], set[str]]:
        engine = create_async_engine(empty_database)
        async with engine.connect() as conn:
            tables = set((await conn.execute(text(tables_sql))).scalars())
            notifying = set((await conn.execute(text(triggers_sql))).scalars())
        await engine.dispose()
        return tables - {"alembic_version"}, notifying

    tables, notifying = asyncio.run(run())
    unwatched = {table.name for table in Base.metadata.sorted_tables if not watched(table)}
    assert tables
    assert unwatched <= tables
    assert tables - unwatched == notifying


def test_deliveries_keep_room_for_their_leases_once_migrated(empty_database: str) -> None:
    """Revision 0024 gives the deliveries' pages the models' fillfactor (decision 0216)."""
    if not empty_database.startswith("postgresql"):
        pytest.skip("SQLite's pages have no fillfactor")
    upgrade(empty_database)
    sql = "SELECT reloptions FROM pg_class WHERE relname = 'webhook_deliveries'"
    options = run_sql(empty_database, [sql])[0][0]
    assert options == [f"fillfactor={FILLFACTOR}"]


def test_the_webhook_log_goes_with_its_subscription_once_migrated(empty_database: str) -> None:
    """Revision 0026 takes the log's foreign key away and deletes a subscription's log by
    trigger, also when its tenant is deleted (decision 0221); the log made before stays."""
    upgrade(empty_database, "0025")
    at = "'2026-01-01 00:00:00'"
    tenant = "INSERT INTO tenants (id, name, settings, signaling_secret, created_at) VALUES "
    subscription = (
        "INSERT INTO webhook_subscriptions (id, tenant_id, url, events, active, secret_sealed,"
        " created_at, created_by, failures) VALUES "
    )
    delivery = (
        "INSERT INTO webhook_deliveries (id, tenant_id, subscription_id, event, body, status,"
        " attempts, created_at, next_attempt_at, seq) VALUES "
    )
    attempt = (
        "INSERT INTO webhook_attempts (tenant_id, subscription_id, delivery_id, event, attempt,"
        " started_at, latency_ms, response_snippet) VALUES "
    )
    rows = [tenant + f"({n}, 't{n}', '{{}}', 'x', {at})" for n in (1, 2)]
    for n, t in ((1, 1), (2, 1), (3, 2)):
        rows += [
            subscription + f"('s{n}', {t}, 'https://x.test', '[]', true, 'x', {at}, 'a', 0)",
            delivery + f"('d{n}', {t}, 's{n}', 'e', 'x', 'succeeded', 1, {at}, {at}, 0)",
            attempt + f"({t}, 's{n}', 'd{n}', 'e', 1, {at}, 3, '')",
        ]
    run_sql(empty_database, rows)
    upgrade(empty_database)
    left = run_sql(
        empty_database,
        [
            "DELETE FROM webhook_subscriptions WHERE id = 's1'",
            "DELETE FROM tenants WHERE id = 2",
            "SELECT subscription_id FROM webhook_attempts",
        ],
    )
    assert [tuple(row) for row in left] == [("s2",)]


def test_linen_ids_are_never_reused_once_migrated(tmp_path: Path) -> None:
    """Revision 0015 rebuilds the linen tables as SQLite AUTOINCREMENT tables (decision 0512):
    the rows and the rows referring to them stay, and a deleted largest id is not given again."""
    import sqlite3

    path = tmp_path / "linen.db"
    url = f"sqlite+aiosqlite:///{path}"
    upgrade(url, "0014")
    now = "2026-01-01 00:00:00.000000"
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO tenants (id, name, settings, signaling_secret, created_at)"
            " VALUES (1, 'acme', '{}', 'x', ?)",
            (now,),
        )
        for item_id, code in ((1, "SHEET"), (2, "TOWEL")):
            db.execute(
                "INSERT INTO linen_item_types (id, tenant_id, code, name, category, unit,"
                " weight_grams, active, components, created_at, updated_at)"
                " VALUES (?, 1, ?, ?, 'bed', 'piece', 0, 1, '[]', ?, ?)",
                (item_id, code, code, now, now),
            )
        db.execute(
            "INSERT INTO linen_laundries (id, tenant_id, name, contact_name, email, phone,"
            " address, vat_id, active, created_at, updated_at)"
            " VALUES (1, 1, 'Blanc', '', '', '', '{}', '', 1, ?, ?)",
            (now, now),
        )
        db.execute(  # a row that a cascading drop of its laundry would take along
            "INSERT INTO linen_laundry_keys (id, tenant_id, laundry_id, name, prefix, key_hash,"
            " created_at, created_by) VALUES (1, 1, 1, 'van', 'lk_x', 'hash', ?, '')",
            (now,),
        )
    upgrade(url)
    marked = {
        table.name
        for table in Base.metadata.sorted_tables
        if table.dialect_options["sqlite"]["autoincrement"]
    }
    with sqlite3.connect(path) as db:
        tables = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
        assert {name for name, sql in tables if "AUTOINCREMENT" in sql} == marked
        assert "linen_item_types" in marked
        assert db.execute("SELECT id, code FROM linen_item_types ORDER BY id").fetchall() == [
            (1, "SHEET"), (2, "TOWEL"),
        ]  # fmt: skip
        assert db.execute("SELECT laundry_id FROM linen_laundry_keys").fetchall() == [(1,)]
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        db.execute("DELETE FROM linen_item_types WHERE id = 2")
        db.execute(
            "INSERT INTO linen_item_types (tenant_id, code, name, category, unit, weight_grams,"
            " active, components, created_at, updated_at)"
            " VALUES (1, 'APRON', 'Apron', 'other', 'piece', 0, 1, '[]', ?, ?)",
            (now, now),
        )
        assert db.execute("SELECT max(id) FROM linen_item_types").fetchone() == (3,)


def test_vault_reveals_outlive_their_entry_once_migrated(empty_database: str) -> None:
    """Revision 0016 keeps a vault entry's reveal log when the entry is deleted, with the
    entry's label, which it fills in for the reveals made before it."""
    upgrade(empty_database, "0015")
    before = [
        "INSERT INTO tenants (id, name, settings, signaling_secret, created_at)"
        " VALUES (1, 'acme', '{}', 'x', '2026-01-01 00:00:00')",
        "INSERT INTO linen_property_groups (id, tenant_id, name, kind, notes, created_at,"
        " updated_at) VALUES (1, 1, 'Coast', 'region', '', '2026-01-01 00:00:00',"
        " '2026-01-01 00:00:00')",
        "INSERT INTO linen_vault_entries (id, tenant_id, group_id, kind, label, secret_sealed,"
        " notes, created_at, updated_at, updated_by) VALUES (1, 1, 1, 'wifi', 'Wi-Fi', 'x', '',"
        " '2026-01-01 00:00:00', '2026-01-01 00:00:00', 'admin')",
        "INSERT INTO linen_vault_reveals (id, tenant_id, entry_id, subject, username, role,"
        " revealed_at) VALUES (1, 1, 1, 'sub', 'power', 'power-user', '2026-01-01 00:00:00')",
    ]

    run_sql(empty_database, before)
    upgrade(empty_database)
    kept = run_sql(
        empty_database,
        [
            "DELETE FROM linen_vault_entries WHERE id = 1",
            "SELECT entry_id, entry_label, username FROM linen_vault_reveals",
        ],
    )
    assert [tuple(row) for row in kept] == [(1, "Wi-Fi", "power")]


def test_browser_sessions_get_a_sid_once_migrated(empty_database: str) -> None:
    """Revision 0020 gives the identity provider's sessions made before it a sid each (unique,
    so they can be listed and ended), with an unknown browser and address; it goes down and up
    again with them in place."""
    from alembic import command

    from switchboard.migrate import alembic_config

    upgrade(empty_database, "0019")
    before = [
        "INSERT INTO tenants (id, name, settings, signaling_secret, created_at)"
        " VALUES (1, 'acme', '{}', 'x', '2026-01-01 00:00:00')",
        "INSERT INTO users (id, tenant_id, username, password_hash, role, disabled, created_at,"
        " failed_logins, email_verified) VALUES (1, 1, 'ana', 'h', 'admin', false,"
        " '2026-01-01 00:00:00', 0, false)",
        "INSERT INTO idp_sessions (id, token_hash, tenant_id, user_id, auth_time, expires_at)"
        " VALUES (1, 'a', 1, 1, '2026-01-01 00:00:00', '2026-01-01 08:00:00'),"
        " (2, 'b', 1, 1, '2026-01-01 00:00:00', '2026-01-01 08:00:00')",
    ]

    run_sql(empty_database, before)
    upgrade(empty_database)
    query = "SELECT sid, user_agent, address FROM idp_sessions ORDER BY id"
    rows = [tuple(row) for row in run_sql(empty_database, [query])]
    assert [row[1:] for row in rows] == [("", ""), ("", "")]
    sids = {row[0] for row in rows}
    assert len(sids) == 2
    assert all(isinstance(sid, str) and len(sid) >= 20 for sid in sids)
    command.downgrade(alembic_config(empty_database), "0019")
    upgrade(empty_database)
    assert len({row[0] for row in run_sql(empty_database, [query])}) == 2
