"""``Database.write``: a write unit of work in one piece (one hand-off to the writer thread on
SQLite), committed whole or rolled back whole, and queued behind the process's other writers."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from switchboard.runtime import Runtime
from tests import factories


def names(session: Session) -> list[str]:
    return list(session.execute(text("SELECT name FROM tenants ORDER BY name")).scalars())


def rename(session: Session) -> int:
    session.execute(text("UPDATE tenants SET name = 'omega' WHERE name = 'zeta'"))
    return len(names(session))


async def test_a_write_commits_whole_and_returns_what_the_work_returns(runtime: Runtime) -> None:
    await factories.tenant(runtime, "zeta", ["zeta.test"])
    count = await runtime.db.write(rename)
    after = await runtime.db.read(names)
    assert count == len(after)
    assert "omega" in after
    assert "zeta" not in after


async def test_a_write_that_raises_leaves_nothing(runtime: Runtime) -> None:
    await factories.tenant(runtime, "zeta", ["zeta.test"])

    def half(session: Session) -> None:
        rename(session)
        raise RuntimeError("stop halfway")

    with pytest.raises(RuntimeError, match="halfway"):
        await runtime.db.write(half)
    assert "zeta" in await runtime.db.read(names)
    assert await runtime.db.write(rename) >= 1  # the connection is usable again


async def test_a_write_waits_for_a_transaction_of_the_same_process(runtime: Runtime) -> None:
    await factories.tenant(runtime, "zeta", ["zeta.test"])
    open_writer = asyncio.Event()
    release = asyncio.Event()

    async def writer() -> None:
        async with runtime.db.transaction() as session:
            await session.execute(text("UPDATE tenants SET name = 'alpha' WHERE name = 'zeta'"))
            open_writer.set()
            await release.wait()

    task = asyncio.create_task(writer())
    await open_writer.wait()
    waiting = asyncio.create_task(runtime.db.write(rename))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    release.set()
    await task
    await waiting
    after = await runtime.db.read(names)
    assert "alpha" in after  # the write ran after the open one committed: no 'zeta' to rename
    assert "omega" not in after
