"""``Database.write_on_driver`` and ``read_on_driver``: a unit of work whose statements are sent
on the driver (decision 0210) reads and writes the same values as through a session, commits as
one transaction and rolls back as one, on both backends (and on an in-memory SQLite database,
through its session)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from sqlalchemy import (
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
    update,
)
from sqlalchemy.orm import Session as SyncSession

from switchboard.kit.db import Database
from switchboard.kit.driver import INTEGRITY_ERRORS, Runner
from switchboard.kit.models import UtcDateTime

probes = MetaData()
PROBE = Table(
    "runner_probe",
    probes,
    Column("id", Integer, primary_key=True),
    Column("name", String(32), nullable=False, unique=True),
    Column("at", UtcDateTime, nullable=True),
    Column("flag", Boolean, nullable=False, default=False),
    Column("body", String(64), nullable=False, default=""),
)
INSERT = insert(PROBE)
ALL = select(PROBE.c.name, PROBE.c.at, PROBE.c.flag, PROBE.c.body).order_by(PROBE.c.name)
# ``flag`` and ``'x'`` are written into the statement: the runner sends their values itself.
FLAG = (
    update(PROBE)
    .where(PROBE.c.name == bindparam("b_name"), PROBE.c.flag.is_(False))
    .values(flag=True, body=PROBE.c.body + "x", at=bindparam("b_at", type_=UtcDateTime))
    .returning(PROBE.c.name, PROBE.c.at, PROBE.c.flag)
)
AT = dt.datetime(2026, 11, 28, 5, 30, 15, 123456, tzinfo=dt.UTC)


@pytest.fixture(params=["file", "memory"])
async def database(db_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Database]:
    if request.param == "memory":
        if not db_url.startswith("sqlite"):
            pytest.skip("an in-memory database is SQLite's")
        db_url = "sqlite+aiosqlite://"
    database = Database(db_url)
    async with database.engine.begin() as conn:
        await conn.run_sync(probes.drop_all)
        await conn.run_sync(probes.create_all)
    yield database
    async with database.engine.begin() as conn:
        await conn.run_sync(probes.drop_all)
    await database.dispose()


def _through_a_session(session: SyncSession) -> list[tuple[object, ...]]:
    return [tuple(row) for row in session.execute(ALL)]


async def test_a_unit_of_work_writes_and_reads_as_a_session_does(database: Database) -> None:
    def work(runner: Runner) -> list[tuple[object, ...]]:
        runner.execute(INSERT, {"name": "a", "at": AT})
        runner.execute(INSERT, {"name": "b", "at": None})
        runner.execute(INSERT, {"name": "c", "at": AT, "flag": True, "body": "y"})
        return runner.rows(FLAG, {"b_name": "a", "b_at": AT + dt.timedelta(seconds=1)})

    flagged = await database.write_on_driver(work)
    assert flagged == [("a", AT + dt.timedelta(seconds=1), True)]
    expected = [
        ("a", AT + dt.timedelta(seconds=1), True, "x"),
        ("b", None, False, ""),  # the columns left out took their defaults
        ("c", AT, True, "y"),
    ]
    assert await database.read_on_driver(lambda runner: runner.rows(ALL, {})) == expected
    assert await database.read(_through_a_session) == expected
    assert await database.write_on_driver(lambda runner: runner.rows(FLAG, {
        "b_name": "a", "b_at": AT
    })) == []  # fmt: skip


async def test_a_unit_that_raises_leaves_nothing(database: Database) -> None:
    def work(runner: Runner) -> None:
        runner.execute(INSERT, {"name": "a"})
        runner.execute(INSERT, {"name": "a"})  # refused: the name is unique

    with pytest.raises(INTEGRITY_ERRORS):
        await database.write_on_driver(work)
    assert await database.read(_through_a_session) == []

    def then_fails(runner: Runner) -> None:
        runner.execute(INSERT, {"name": "b"})
        raise RuntimeError("the unit's own failure")

    with pytest.raises(RuntimeError):
        await database.write_on_driver(then_fails)
    assert await database.read(_through_a_session) == []


async def test_a_write_moves_the_change_version(database: Database) -> None:
    before = (database.changes.generation, database.changes.version())
    await database.write_on_driver(lambda runner: runner.execute(INSERT, {"name": "a"}))
    assert (database.changes.generation, database.changes.version()) != before


async def test_a_unit_cancelled_mid_way_leaves_the_pool_usable(database: Database) -> None:
    if database.dialect != "postgresql":
        pytest.skip("SQLite's units run on a thread and are not cancelled mid-way")
    slow = select(text("pg_sleep(5)"))

    def work(runner: Runner) -> None:
        runner.execute(INSERT, {"name": "never"})
        runner.rows(slow, {})

    for _ in range(3):
        task = asyncio.create_task(database.write_on_driver(work))
        await asyncio.sleep(0.1)  # the sleep has reached the server
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    one = select(bindparam("n", type_=Integer))

    def numbered(n: int) -> Callable[[Runner], list[tuple[Any, ...]]]:
        return lambda runner: runner.rows(one, {"n": n})

    answers = await asyncio.gather(*(database.read_on_driver(numbered(n)) for n in range(30)))
    assert answers == [[(n,)] for n in range(30)]
    assert await database.read(_through_a_session) == []  # the cancelled units wrote nothing
