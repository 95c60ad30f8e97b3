"""Test harness: every test gets a fresh database, on SQLite and (when configured) PostgreSQL.

``SWITCHBOARD_TEST_POSTGRES_URL`` (e.g. ``postgresql+asyncpg://127.0.0.1:5432/test``) names a
server; the run creates its own database there, migrates it once and truncates it between tests.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from httpx import ASGITransport, AsyncClient
from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Table,
    cast,
    exists,
    func,
    literal,
    or_,
    select,
    text,
    union_all,
)
from sqlalchemy.dialects.postgresql import REGCLASS
from sqlalchemy.ext.asyncio import create_async_engine

from switchboard.app import create_app
from switchboard.kit.clock import ManualClock
from switchboard.kit.crypto import SecretBox
from switchboard.kit.db import Database
from switchboard.models import Base
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories

PG_URL = os.environ.get("SWITCHBOARD_TEST_POSTGRES_URL", "")
BACKENDS = ["sqlite"] + (["postgres"] if PG_URL else [])

# Tests that use a host-wide resource run on one xdist worker: the relay tests own the test
# hosts' fixed documentation addresses (203.0.113.0/24, 198.51.100.0/24) and an nftables table.
SERIAL_GROUPS = {"relay": "relay"}


# Tests marked `alone` need the machine to themselves: the parallel suite skips them and
# `make test` runs them afterwards with `SWITCHBOARD_TEST_ALONE=1 pytest -n 0 -m alone`.
ALONE = os.environ.get("SWITCHBOARD_TEST_ALONE") == "1"


def _seconds(item: pytest.Item) -> float:
    marker = item.get_closest_marker("long")
    return float(marker.kwargs["seconds"]) if marker is not None else 0.0


def _join_group(config: pytest.Config, item: pytest.Item, group: str) -> None:
    """Name the group in the node id, where `--dist loadgroup` looks for it. pytest-xdist 3.8 does
    this by setting `_nodeid`, which pytest 9.2's node ids no longer read (pytest-xdist #1386):
    without this the group's tests spread over both workers."""
    if getattr(config.option, "loadgroup", False) and hasattr(item, "_id"):
        from _pytest.nodeid import coerce_node_id

        if not item.nodeid.endswith(f"@{group}"):
            item._id = coerce_node_id(f"{item.nodeid}@{group}")


# First, before xdist's own hook reads the xdist_group markers added here.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The longest tests first: one started last would keep its worker busy while the other idles.
    # (xdist hands out the multi-test xdist_groups before single tests, then follows this order.)
    items.sort(key=_seconds, reverse=True)
    for item in items:
        folder = item.path.parent.name
        if folder in SERIAL_GROUPS:
            item.add_marker(pytest.mark.xdist_group(SERIAL_GROUPS[folder]))
            _join_group(config, item, SERIAL_GROUPS[folder])
        if item.get_closest_marker("alone") is not None and not ALONE:
            item.add_marker(pytest.mark.skip(reason="run with SWITCHBOARD_TEST_ALONE=1"))


TEST_SECRET = "test-secret-key-with-at-least-32-characters"
PRIMARY_HOST = "acme.test"


async def _prepare(url: str) -> None:
    """Create the schema from the models (migrations are checked against it separately) and
    seed a signing key, which spares every test an RSA key generation."""
    database = Database(url)
    async with database.engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    runtime_box = SecretBox(TEST_SECRET)
    from switchboard.auth.keys import Keyring

    keyring = Keyring(runtime_box, ManualClock())
    async with database.transaction() as session:
        await keyring.rotate(session)
    await database.dispose()


@pytest.fixture(autouse=True)
def _root_logger_as_found() -> Iterator[None]:
    """A test leaves the root logger's level as it found it: a level left behind decides which
    records later tests capture. (A command run in process sets up its log only once its
    options are accepted, so a refused start changes nothing.)"""
    root = logging.getLogger()
    level = root.level
    yield
    assert root.level == level, f"the root logger's level moved from {level} to {root.level}"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    url = f"sqlite+aiosqlite:///{path}"
    asyncio.run(_prepare(url))
    return path


def _admin_url(url: str, database: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{database}"


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    name = f"sb_test_{uuid.uuid4().hex[:10]}"

    async def admin(sql: str) -> None:
        engine = create_async_engine(PG_URL, isolation_level="AUTOCOMMIT")
        async with engine.connect() as conn:
            await conn.execute(text(sql))
        await engine.dispose()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    url = _admin_url(PG_URL, name)
    try:
        asyncio.run(_prepare(url))
        yield url
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


KEEP_TABLES = {"signing_keys"}


def _has_id_sequence(table: Table) -> bool:
    return "id" in table.c and table.c.id.primary_key and table.c.id.autoincrement is not False


def _emptied_tables() -> list[Table]:
    return [t for t in Base.metadata.sorted_tables if t.name not in KEEP_TABLES]


@functools.cache
def _used_tables_query() -> CompoundSelect[str]:
    """Which tables an earlier test touched: rows in them, or their id sequence moved."""
    checks = []
    for table in _emptied_tables():
        used: ColumnElement[bool] = exists(select(literal(1)).select_from(table))
        if _has_id_sequence(table):
            sequence = cast(func.pg_get_serial_sequence(table.name, "id"), REGCLASS)
            used = or_(used, func.pg_sequence_last_value(sequence).is_not(None))
        checks.append(select(literal(table.name)).where(used))
    return union_all(*checks)


async def _truncate(url: str) -> None:
    """Empty what an earlier test used and restart its ids: rows deleted children first, then the
    sequences set back. A TRUNCATE of every table costs about ten times as much (each table is
    a file and catalog work, and a cascade reaches every table that refers to a tenant)."""
    tables = _emptied_tables()
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        used = set((await conn.execute(_used_tables_query())).scalars())
        for table in reversed(tables):
            if table.name in used:
                await conn.execute(table.delete())
        restarts = [
            func.setval(func.pg_get_serial_sequence(t.name, "id"), 1, False)
            for t in tables
            if t.name in used and _has_id_sequence(t)
        ]
        if restarts:
            await conn.execute(select(*restarts))
    await engine.dispose()


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        target = tmp_path / "switchboard.db"
        shutil.copyfile(template, target)
        return f"sqlite+aiosqlite:///{target}"
    url: str = request.getfixturevalue("postgres_database")
    asyncio.run(_truncate(url))
    return url


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=db_url,
        data_dir=tmp_path,
        public_base_url=f"http://{PRIMARY_HOST}",
        secret_key=TEST_SECRET,
        run_workers=False,
        webhook_retry_delays=(0.2, 0.4, 0.8),
        # Cheap Argon2 parameters: tests exercise the flows, not the hash's cost.
        argon2_time_cost=1,
        argon2_memory_kib=64,
        argon2_parallelism=1,
    )


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """Runs ``switchboard ...`` in process on this test's database and data folder, as the
    ``settings`` above (cheap Argon2 parameters), with ``http://ops.test`` as the public URL."""
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", db_url)
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_SECRET_KEY", TEST_SECRET)
    monkeypatch.setenv("SWITCHBOARD_PUBLIC_BASE_URL", "http://ops.test")
    monkeypatch.setenv("SWITCHBOARD_ARGON2_TIME_COST", "1")
    monkeypatch.setenv("SWITCHBOARD_ARGON2_MEMORY_KIB", "64")
    monkeypatch.setenv("SWITCHBOARD_ARGON2_PARALLELISM", "1")
    return CliRunner()


@pytest.fixture
async def runtime(settings: Settings, clock: ManualClock) -> AsyncIterator[Runtime]:
    runtime = Runtime(settings, clock=clock)
    yield runtime
    await runtime.db.dispose()


@pytest.fixture
async def app_client(runtime: Runtime) -> AsyncIterator[AsyncClient]:
    app = create_app(runtime=runtime)
    async with runtime.lifespan():
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url=f"http://{PRIMARY_HOST}") as client:
            yield client


@pytest.fixture
async def acme(runtime: Runtime) -> factories.TenantFixture:
    """The primary tenant, with an admin, a power-user, a user and the client ``cli``."""
    return await factories.tenant(runtime, "acme", [PRIMARY_HOST])


@pytest.fixture
async def globex(runtime: Runtime) -> factories.TenantFixture:
    """A second tenant, for isolation tests."""
    return await factories.tenant(runtime, "globex", ["globex.test"])
