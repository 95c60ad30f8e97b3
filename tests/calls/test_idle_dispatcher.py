"""An idle dispatcher asks the database nothing until something is committed, by this process
or another, or the earliest waiting call falls due (decision 0222)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from httpx import AsyncClient

from switchboard.kit.changes import Quiet
from switchboard.kit.clock import ManualClock
from switchboard.platform.calls import tasks
from switchboard.runtime import Runtime
from tests.calls.conftest import Org
from tests.calls.helpers import place, settle


async def _idle(runtime: Runtime, statements: list[str]) -> Quiet:
    """A dispatcher's quiet after its first look (a read that found nothing due)."""
    await runtime.db.changes.caught_up()  # every notification of earlier commits is in
    quiet = Quiet(runtime.db.changes)
    statements.clear()
    assert await tasks.dispatch_if_due(runtime, quiet) == 0
    assert _reads_only(statements)
    return quiet


def _reads_only(statements: list[str]) -> bool:
    """Whether ``statements`` is a look: at least one statement, and only reads."""
    return bool(statements) and all(s.lstrip().upper().startswith("SELECT") for s in statements)


async def _passes_read_nothing(runtime: Runtime, quiet: Quiet, statements: list[str]) -> None:
    statements.clear()
    for _ in range(3):
        assert await tasks.dispatch_if_due(runtime, quiet) == 0
    assert statements == []


async def test_an_idle_dispatcher_looks_again_after_a_commit_and_dials_when_due(
    app_client: AsyncClient, runtime: Runtime, org: Org, clock: ManualClock, statements: list[str]
) -> None:
    quiet = await _idle(runtime, statements)
    await _passes_read_nothing(runtime, quiet, statements)

    await place(app_client, org.headers, scheduleAtUtc="2026-01-01T13:00:00Z")
    await runtime.db.changes.caught_up()
    statements.clear()
    assert await tasks.dispatch_if_due(runtime, quiet) == 0  # looked: due in an hour
    assert _reads_only(statements)

    clock.advance(3599)
    await _passes_read_nothing(runtime, quiet, statements)
    clock.advance(1)
    assert await tasks.dispatch_if_due(runtime, quiet) == 1
    await settle(runtime)


@pytest.mark.usefixtures("app_client")  # this process's view of the others' commits is up
async def test_a_call_another_process_schedules_ends_the_quiet(
    runtime: Runtime,
    org: Org,
    clock: ManualClock,
    statements: list[str],
    client_with: Callable[..., Any],
) -> None:
    quiet = await _idle(runtime, statements)
    await _passes_read_nothing(runtime, quiet, statements)

    _, other = await client_with()
    await place(other, org.headers, scheduleAtUtc="2026-01-01T12:30:00Z")
    await runtime.db.changes.caught_up()
    statements.clear()
    assert await tasks.dispatch_if_due(runtime, quiet) == 0  # looked: due in half an hour
    assert statements

    clock.advance(1800)
    assert await tasks.dispatch_if_due(runtime, quiet) == 1
    await settle(runtime)


async def test_a_retry_is_dialled_at_its_time_with_nothing_committed_meanwhile(
    app_client: AsyncClient, runtime: Runtime, org: Org, clock: ManualClock, statements: list[str]
) -> None:
    await place(app_client, org.headers, phone="+14155550101", retries=1, retryDelayMinutes=5)
    await settle(runtime)  # no answer: the retry waits five minutes
    quiet = await _idle(runtime, statements)

    clock.advance(299)
    await _passes_read_nothing(runtime, quiet, statements)
    clock.advance(1)
    assert await tasks.dispatch_if_due(runtime, quiet) == 1
    await settle(runtime)
