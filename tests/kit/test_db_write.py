"""``Database.write``: a write unit of work in one piece (one hand-off to the writer thread on
SQLite), committed whole or rolled back whole, and queued behind the process's other writers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

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


@contextlib.asynccontextmanager
async def an_open_transaction(runtime: Runtime, statement: str = "SELECT 1") -> AsyncIterator[None]:
    """While the body runs, a transaction of this process that ran ``statement`` stays open (on
    SQLite it holds the process's write turn); it commits when the body ends."""
    opened, release = asyncio.Event(), asyncio.Event()

    async def writer() -> None:
        async with runtime.db.transaction() as session:
            await session.execute(text(statement))
            opened.set()
            await release.wait()

    task = asyncio.create_task(writer())
    await opened.wait()
    try:
        yield
    finally:
        release.set()
        await task


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
    async with an_open_transaction(
        runtime, "UPDATE tenants SET name = 'alpha' WHERE name = 'zeta'"
    ):
        waiting = asyncio.create_task(runtime.db.write(rename))
        await asyncio.sleep(0.05)
        assert not waiting.done()
    await waiting
    after = await runtime.db.read(names)
    assert "alpha" in after  # the write ran after the open one committed: no 'zeta' to rename
    assert "omega" not in after


async def test_writes_queued_together_commit_together_and_each_fails_alone(
    runtime: Runtime,
) -> None:
    for name in ("a1", "a2", "a3", "a4"):
        await factories.tenant(runtime, name, [f"{name}.test"])
    sessions: list[Session] = []  # kept alive, so that identity compares them

    def renamer(old: str, new: str, *, fail: bool = False) -> Callable[[Session], str]:
        def work(session: Session) -> str:
            sessions.append(session)
            session.execute(text("UPDATE tenants SET name = :new WHERE name = :old"),
                            {"new": new, "old": old})  # fmt: skip
            if fail:
                raise ValueError(f"{old} refused")
            return new

        return work

    async with an_open_transaction(runtime):  # the others queue behind it
        queued = [
            asyncio.create_task(runtime.db.write(renamer("a1", "b1"))),
            asyncio.create_task(runtime.db.write(renamer("a2", "b2", fail=True))),
            asyncio.create_task(runtime.db.write(renamer("a3", "b3"))),
            asyncio.create_task(runtime.db.write(renamer("a4", "b4"))),
        ]
        await asyncio.sleep(0)
    outcomes = await asyncio.gather(*queued, return_exceptions=True)
    assert [outcomes[0], outcomes[2], outcomes[3]] == ["b1", "b3", "b4"]
    assert isinstance(outcomes[1], ValueError)
    assert str(outcomes[1]) == "a2 refused"
    after = await runtime.db.read(names)
    assert {"b1", "b3", "b4", "a2"} <= set(after)  # the refused unit alone left nothing
    assert "b2" not in after
    if runtime.db.dialect == "sqlite":  # one transaction, one session, for the queued units
        assert len(sessions) == 4
        assert all(session is sessions[0] for session in sessions)


async def test_a_write_cancelled_while_it_waits_for_the_turn_never_runs(runtime: Runtime) -> None:
    if runtime.db.dialect != "sqlite":
        pytest.skip("only SQLite's writes wait for the process's write turn")
    await factories.tenant(runtime, "zeta", ["zeta.test"])
    async with an_open_transaction(runtime):
        gone = asyncio.create_task(runtime.db.write(rename))
        kept = asyncio.create_task(runtime.db.write(names))
        await asyncio.sleep(0)
        gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert "zeta" in await kept  # the cancelled unit did not run before it, nor after
    assert "zeta" in await runtime.db.read(names)
