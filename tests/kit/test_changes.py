"""``Changes.version()``: moves with every committed write, of this process or another, and
not with reads; a transaction cut short mid-statement ends as it would without it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import create_async_engine

from switchboard.kit.driver import Runner
from switchboard.runtime import Runtime
from switchboard.tenants.models import Tenant
from tests import factories

ANOTHER_PROCESS_WRITES = """
import asyncio, sys
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

async def main() -> None:
    engine = create_async_engine(sys.argv[1])
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE tenants SET name = 'omega' WHERE name = 'zeta'"))
    await engine.dispose()

asyncio.run(main())
"""


@pytest.fixture
async def watching(runtime: Runtime) -> AsyncIterator[Runtime]:
    """The runtime started as an application with a read cache starts it (it watches for
    changes), holding tenant ``zeta``, every notification of that write arrived."""
    runtime.watch_changes = True
    await runtime.start(run_workers=False)
    try:
        await factories.tenant(runtime, "zeta", ["zeta.test"])
        await runtime.db.changes.caught_up()
        yield runtime
    finally:
        await runtime.stop()


async def test_writes_move_the_version_and_reads_do_not(watching: Runtime) -> None:
    runtime = watching
    before = runtime.db.changes.version()
    assert before is not None
    async with runtime.db.transaction(read_only=True) as session:
        await session.execute(text("SELECT count(*) FROM tenants"))
    await runtime.db.changes.caught_up()
    assert runtime.db.changes.version() == before
    async with runtime.db.transaction() as session:
        await session.execute(text("UPDATE tenants SET name = 'omega' WHERE name = 'zeta'"))
    assert runtime.db.changes.version() != before  # this process's write: at once
    await runtime.db.changes.caught_up()
    seen = runtime.db.changes.version()
    stranger = create_async_engine(runtime.settings.resolved_database_url)
    try:
        async with stranger.begin() as conn:
            await conn.execute(text("UPDATE tenants SET name = 'zeta' WHERE name = 'omega'"))
    finally:
        await stranger.dispose()
    await runtime.db.changes.caught_up()
    assert runtime.db.changes.version() != seen  # another connection's write


async def test_a_unit_on_the_driver_is_a_change_only_if_it_wrote(watching: Runtime) -> None:
    """A worker's claim that locked candidates and found none to take changes nothing, so it
    does not move the version (decision 0222); one that updated a row does."""
    runtime = watching
    before = runtime.db.changes.version()
    locked = select(Tenant.id).where(Tenant.name == "zeta").with_for_update(skip_locked=True)

    def claim_nothing(runner: Runner) -> int:
        return len(runner.rows(locked, {}))

    assert await runtime.db.write_on_driver(claim_nothing) == 1
    await runtime.db.changes.caught_up()
    assert runtime.db.changes.version() == before

    def rename(runner: Runner) -> None:
        runner.execute(update(Tenant).where(Tenant.name == "zeta").values(name="omega"), {})

    await runtime.db.write_on_driver(rename)
    assert runtime.db.changes.version() != before


async def test_a_cancelled_statement_ends_its_transaction_cleanly(runtime: Runtime) -> None:
    sleep = "SELECT pg_sleep(5)" if runtime.db.dialect == "postgresql" else None
    if sleep is None:
        pytest.skip("SQLite's statements run on a thread and are not cancelled mid-way")
    entered = asyncio.Event()

    async def slow() -> None:
        async with runtime.db.transaction() as session:
            await session.execute(text("UPDATE tenants SET name = name"))
            entered.set()
            await session.execute(text(sleep))

    task = asyncio.create_task(slow())
    await entered.wait()
    await asyncio.sleep(0.05)  # let the slow statement reach the server
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with runtime.db.transaction() as session:
        assert (await session.execute(text("SELECT 1"))).scalar() == 1


async def test_another_connections_statements_move_the_version_only_when_they_change_rows(
    runtime: Runtime,
) -> None:
    """An insert, an update and a delete by another connection each move the version; a
    statement that matched no row does not (PostgreSQL: the trigger on every table fires per
    changed row, decision 0960; a SQLite file: a commit that wrote nothing leaves its data
    version as it was)."""
    runtime.watch_changes = True
    await runtime.start(run_workers=False)
    stranger = create_async_engine(runtime.settings.resolved_database_url)
    try:
        await factories.tenant(runtime, "zeta", ["zeta.test"])

        async def moved_by(statement: str) -> bool:
            await runtime.db.changes.caught_up()
            before = runtime.db.changes.version()
            async with stranger.begin() as conn:
                await conn.execute(text(statement))
            await runtime.db.changes.caught_up()
            return runtime.db.changes.version() != before

        assert not await moved_by("UPDATE tenants SET name = 'none' WHERE name = 'nobody'")
        assert not await moved_by("DELETE FROM tenant_domains WHERE domain = 'nowhere.test'")
        assert await moved_by("UPDATE tenants SET name = 'omega' WHERE name = 'zeta'")
        assert await moved_by("DELETE FROM tenant_domains WHERE domain = 'zeta.test'")
        assert await moved_by(
            "INSERT INTO tenant_domains (tenant_id, domain)"
            " SELECT id, 'omega.test' FROM tenants WHERE name = 'omega'"
        )
    finally:
        await stranger.dispose()
        await runtime.stop()


async def test_the_version_holds_for_a_turn_of_the_loop_and_moves_in_the_next(
    watching: Runtime,
) -> None:
    """Another process commits while this one's event loop is in the middle of a turn: every
    request whose work runs in that turn arrived before it, so the version the turn first saw
    holds for all of it; the next turn sees the commit (on PostgreSQL, once its notification
    has arrived). A thread, outside the loop's turns, asks afresh."""
    runtime = watching
    before = runtime.db.changes.version()
    assert before is not None
    # Blocking on purpose: the other process commits while this turn holds the loop.
    url = runtime.settings.resolved_database_url
    subprocess.run([sys.executable, "-c", ANOTHER_PROCESS_WRITES, url], check=True)  # noqa: ASYNC221
    assert runtime.db.changes.version() == before
    with ThreadPoolExecutor(1) as thread:
        asked_outside = thread.submit(runtime.db.changes.version).result()
    if runtime.db.dialect == "sqlite":  # PostgreSQL's notification waits for the loop
        assert asked_outside != before
    await asyncio.sleep(0)
    await runtime.db.changes.caught_up()
    assert runtime.db.changes.version() != before
