"""Two processes writing one SQLite file (``serve --no-workers`` plus ``switchboard worker``):
every write transaction gets its turn, however many are queued in each process.

Two ``Database`` objects stand for the two processes: each has its own connection pool, and
SQLite's lock is all they share. The busy timeout is cut to 0.25 s so that starvation, which
under production load took the 10 s timeout to show, shows here in a fraction of a second."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from switchboard.kit.db import Database

WRITERS_PER_PROCESS = 60
Processes = tuple[Database, Database]


@pytest.fixture
async def processes(tmp_path: Path) -> AsyncIterator[Processes]:
    """``serve`` and ``worker`` on one SQLite file holding a counter at 0."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    serve, worker = Database(url, busy_timeout=0.25), Database(url, busy_timeout=0.25)
    async with serve.transaction() as session:
        await session.execute(text("CREATE TABLE counter (n INTEGER)"))
        await session.execute(text("INSERT INTO counter VALUES (0)"))
    yield serve, worker
    await serve.dispose()
    await worker.dispose()


def count(session: Session) -> int:
    return int(session.execute(text("SELECT n FROM counter")).scalar_one())


async def assert_every_increment_counted(
    processes: Processes, increments: list[Awaitable[None]]
) -> None:
    results = await asyncio.gather(*increments, return_exceptions=True)
    failures = [repr(r) for r in results if isinstance(r, BaseException)]
    assert failures == []
    assert await processes[1].read(count) == 2 * WRITERS_PER_PROCESS


async def test_writers_of_two_processes_never_see_database_is_locked(processes: Processes) -> None:
    async def increment(database: Database) -> None:
        async with database.transaction() as session:
            n = (await session.execute(text("SELECT n FROM counter"))).scalar_one()
            await asyncio.sleep(0.003)  # work inside the transaction, e.g. a dial on loopback
            await session.execute(text("UPDATE counter SET n = :n"), {"n": n + 1})

    await assert_every_increment_counted(
        processes,
        [increment(database) for database in processes for _ in range(WRITERS_PER_PROCESS)],
    )


async def test_write_units_of_two_processes_never_see_database_is_locked(
    processes: Processes,
) -> None:
    """The same through ``Database.write``: each process's queued units commit in groups on its
    writer thread, and a BEGIN IMMEDIATE that outwaits the busy timeout is retried."""

    def increment(session: Session) -> None:
        n = count(session)
        time.sleep(0.006)  # work inside the transaction: a group outlasts the busy timeout
        session.execute(text("UPDATE counter SET n = :n"), {"n": n + 1})

    await assert_every_increment_counted(
        processes,
        [database.write(increment) for database in processes for _ in range(WRITERS_PER_PROCESS)],
    )
