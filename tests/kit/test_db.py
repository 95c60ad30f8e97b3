"""The transaction mechanics every feature relies on, on both backends."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session as SyncSession

from switchboard.kit.db import Database, after_commit


async def test_concurrent_read_then_write_loses_no_update(db_url: str) -> None:
    database = Database(db_url)
    async with database.engine.begin() as conn:
        await conn.execute(text("CREATE TABLE IF NOT EXISTS counter_probe (n INTEGER)"))
        await conn.execute(text("DELETE FROM counter_probe"))
        await conn.execute(text("INSERT INTO counter_probe VALUES (0)"))
    lock = " FOR UPDATE" if database.dialect == "postgresql" else ""

    async def increment() -> None:
        async with database.transaction() as session:
            query = text(f"SELECT n FROM counter_probe{lock}")  # noqa: S608 (constant)
            n = (await session.execute(query)).scalar_one()
            await asyncio.sleep(0)  # let the other transactions run between the read and the write
            await session.execute(text("UPDATE counter_probe SET n = :n"), {"n": n + 1})

    await asyncio.gather(*(increment() for _ in range(8)))
    async with database.transaction(read_only=True) as session:
        assert (await session.execute(text("SELECT n FROM counter_probe"))).scalar_one() == 8
        await session.execute(text("DROP TABLE counter_probe"))
    await database.dispose()


async def test_after_commit_hooks_run_only_after_a_commit(db_url: str) -> None:
    database = Database(db_url)
    ran: list[str] = []
    async with database.transaction() as session:
        after_commit(session, lambda: ran.append("committed"))
    try:
        async with database.transaction() as session:
            after_commit(session, lambda: ran.append("rolled back"))
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert ran == ["committed"]
    await database.dispose()


async def test_a_single_statement_write_commits_and_counts_as_a_change(db_url: str) -> None:
    database = Database(db_url)
    async with database.engine.begin() as conn:
        await conn.execute(text("CREATE TABLE IF NOT EXISTS single_probe (n INTEGER)"))
        await conn.execute(text("DELETE FROM single_probe"))
    # This process's own writes (PostgreSQL), or the file's data version (SQLite).
    before = (database.changes.generation, database.changes.version())

    def insert(session: SyncSession) -> str:
        session.connection().execute(text("INSERT INTO single_probe VALUES (7)"))
        return "done"

    assert await database.write(insert, single=True) == "done"
    assert (database.changes.generation, database.changes.version()) != before
    other = Database(db_url)  # another process's connection sees it committed
    assert await other.read(lambda s: s.execute(text("SELECT n FROM single_probe")).all()) == [(7,)]
    await other.dispose()
    async with database.engine.begin() as conn:
        await conn.execute(text("DROP TABLE single_probe"))
    await database.dispose()


async def test_a_single_statement_write_refuses_a_second_statement(db_url: str) -> None:
    database = Database(db_url)
    if database.dialect != "postgresql":
        await database.dispose()
        pytest.skip("only PostgreSQL sends the statement without a transaction")

    def two(session: SyncSession) -> None:
        session.connection().execute(text("SELECT 1"))
        session.connection().execute(text("SELECT 2"))

    with pytest.raises(RuntimeError, match="second statement"):
        await database.write(two, single=True)
    await database.write(two)  # in a transaction, as many as it likes
    # The connection went back to the pool: the next single write starts counting afresh.
    assert await database.write(lambda s: s.execute(text("SELECT 1")).scalar(), single=True) == 1
    await database.dispose()
