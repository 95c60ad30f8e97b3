"""Two processes writing one SQLite file (``serve --no-workers`` plus ``switchboard worker``):
every write transaction gets its turn, however many are queued in each process.

Two ``Database`` objects stand for the two processes: each has its own connection pool, and
SQLite's lock is all they share. The busy timeout is cut to 0.25 s so that starvation, which
under production load took the 10 s timeout to show, shows here in a fraction of a second."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.orm import Session

from switchboard.kit.db import Database

WRITERS_PER_PROCESS = 60


async def test_writers_of_two_processes_never_see_database_is_locked(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    serve, worker = Database(url, busy_timeout=0.25), Database(url, busy_timeout=0.25)
    async with serve.transaction() as session:
        await session.execute(text("CREATE TABLE counter (n INTEGER)"))
        await session.execute(text("INSERT INTO counter VALUES (0)"))

    async def increment(database: Database) -> None:
        async with database.transaction() as session:
            n = (await session.execute(text("SELECT n FROM counter"))).scalar_one()
            await asyncio.sleep(0.003)  # work inside the transaction, e.g. a dial on loopback
            await session.execute(text("UPDATE counter SET n = :n"), {"n": n + 1})

    results = await asyncio.gather(
        *(increment(serve) for _ in range(WRITERS_PER_PROCESS)),
        *(increment(worker) for _ in range(WRITERS_PER_PROCESS)),
        return_exceptions=True,
    )
    failures = [repr(r) for r in results if isinstance(r, BaseException)]
    assert failures == []
    async with worker.transaction(read_only=True) as session:
        total = (await session.execute(text("SELECT n FROM counter"))).scalar_one()
    assert total == 2 * WRITERS_PER_PROCESS
    await serve.dispose()
    await worker.dispose()


async def test_write_units_of_two_processes_never_see_database_is_locked(tmp_path: Path) -> None:
    """The same through ``Database.write``: each process's queued units commit in groups on its
    writer thread, and a BEGIN IMMEDIATE that outwaits the busy timeout is retried."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    serve, worker = Database(url, busy_timeout=0.25), Database(url, busy_timeout=0.25)
    async with serve.transaction() as session:
        await session.execute(text("CREATE TABLE counter (n INTEGER)"))
        await session.execute(text("INSERT INTO counter VALUES (0)"))

    def increment(session: Session) -> None:
        n = session.execute(text("SELECT n FROM counter")).scalar_one()
        time.sleep(0.006)  # work inside the transaction: a group outlasts the busy timeout
        session.execute(text("UPDATE counter SET n = :n"), {"n": n + 1})

    results = await asyncio.gather(
        *(serve.write(increment) for _ in range(WRITERS_PER_PROCESS)),
        *(worker.write(increment) for _ in range(WRITERS_PER_PROCESS)),
        return_exceptions=True,
    )
    failures = [repr(r) for r in results if isinstance(r, BaseException)]
    assert failures == []
    total = await worker.read(
        lambda session: session.execute(text("SELECT n FROM counter")).scalar_one()
    )
    assert total == 2 * WRITERS_PER_PROCESS
    await serve.dispose()
    await worker.dispose()
