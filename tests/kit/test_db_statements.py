"""``Database.first`` and ``Database.insert``: one statement as a transaction of its own, the
same values as through a session on both backends (on PostgreSQL they are sent on the driver,
decision 0999)."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    insert,
    select,
    text,
)
from sqlalchemy.orm import Session as SyncSession

from switchboard.kit.db import Database
from switchboard.kit.models import UtcDateTime

probes = MetaData()
PROBE = Table(
    "statement_probe",
    probes,
    Column("id", Integer, primary_key=True),
    Column("name", String(32), nullable=False),
    Column("tags", JSON, nullable=False),
    Column("at", UtcDateTime, nullable=True),
    Column("flag", Boolean, nullable=False, default=False),
    Column("note", String(32), nullable=False, default=""),
    Column("serial", Integer, nullable=False, default=itertools.count().__next__),
)
BY_NAME = select(PROBE.c.name, PROBE.c.tags, PROBE.c.at, PROBE.c.flag, PROBE.c.note).where(
    PROBE.c.name == bindparam("name")
)
AT = dt.datetime(2026, 11, 28, 5, 30, 15, 123456, tzinfo=dt.UTC)


@pytest.fixture
async def database(db_url: str) -> AsyncIterator[Database]:
    database = Database(db_url)
    async with database.engine.begin() as conn:
        await conn.run_sync(probes.drop_all)
        await conn.run_sync(probes.create_all)
    yield database
    async with database.engine.begin() as conn:
        await conn.run_sync(probes.drop_all)
    await database.dispose()


async def test_an_insert_and_a_first_row_round_trip_every_type(database: Database) -> None:
    values = {"name": "a", "tags": ["x", 2], "at": AT, "flag": True, "serial": 1}
    await database.insert(insert(PROBE), values)
    row = await database.first(BY_NAME, {"name": "a"})
    assert row == ("a", ["x", 2], AT, True, "")  # ``note`` took its column default

    def through_a_session(session: SyncSession) -> tuple[object, ...]:
        found = session.execute(BY_NAME, {"name": "a"}).first()
        assert found is not None
        return tuple(found)

    assert await database.read(through_a_session) == row
    assert await database.first(BY_NAME, {"name": "nobody"}) is None


async def test_an_insert_commits_and_moves_the_change_version(database: Database) -> None:
    before = (database.changes.generation, database.changes.version())
    await database.insert(insert(PROBE), {"name": "b", "tags": [], "serial": 2})
    assert (database.changes.generation, database.changes.version()) != before
    other = Database(database.url)  # another connection sees it committed
    assert await other.first(BY_NAME, {"name": "b"}) == ("b", [], None, False, "")
    await other.dispose()


async def test_a_failing_insert_leaves_nothing(database: Database) -> None:
    await database.insert(insert(PROBE), {"id": 1, "name": "c", "tags": [], "serial": 3})
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        await database.insert(insert(PROBE), {"id": 1, "name": "d", "tags": [], "serial": 4})
    assert await database.first(BY_NAME, {"name": "d"}) is None
    assert await database.first(BY_NAME, {"name": "c"}) is not None


async def test_an_insert_that_leaves_out_a_computed_default_is_refused(
    database: Database,
) -> None:
    with pytest.raises(TypeError, match="serial"):
        await database.insert(insert(PROBE), {"name": "e", "tags": []})
    assert await database.first(BY_NAME, {"name": "e"}) is None


async def test_a_statement_cancelled_mid_way_leaves_the_pool_usable(database: Database) -> None:
    if database.dialect != "postgresql":
        pytest.skip("SQLite's statements run on a thread and are not cancelled mid-way")
    slow = select(text("pg_sleep(5)")).where(bindparam("go", type_=Boolean))
    for _ in range(3):
        task = asyncio.create_task(database.first(slow, {"go": True}))
        await asyncio.sleep(0.1)  # the statement has reached the server
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    # Every connection the pool hands out answers (a cancelled one was dropped, not reused).
    answers = await asyncio.gather(
        *(database.first(select(bindparam("n", type_=Integer)), {"n": n}) for n in range(30))
    )
    assert answers == [(n,) for n in range(30)]


async def test_a_connection_the_server_dropped_is_not_handed_out_again(
    database: Database,
) -> None:
    if database.dialect != "postgresql":
        pytest.skip("SQLite has no server to drop a connection")
    one = select(bindparam("n", type_=Integer))
    assert await database.first(one, {"n": 1}) == (1,)  # a connection now waits in the pool
    other = Database(database.url)
    kill = text(
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "  # waits for the end
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    await other.read(lambda session: session.execute(kill).all())
    await other.dispose()
    outcomes: list[object] = []
    for n in range(3):
        try:
            outcomes.append(await database.first(one, {"n": n}))
        except Exception as exc:  # the dropped connection fails once, then is discarded
            outcomes.append(type(exc).__name__)
    assert outcomes[1:] == [(1,), (2,)]
