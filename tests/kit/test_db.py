"""The transaction mechanics every feature relies on, on both backends."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

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
