"""Real ``switchboard worker`` processes killed with SIGKILL while events flow: afterwards every
event has been delivered at least once, and duplicates stay within what was in flight."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import random
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from switchboard.kit.clock import ManualClock
from switchboard.platform.webhooks.models import Delivery
from switchboard.platform.webhooks.tasks import MAX_LEASED
from switchboard.runtime import Runtime
from tests.conftest import TEST_SECRET
from tests.factories import TenantFixture
from tests.webhooks.conftest import Receiver, fire, subscribe

EVENTS = 1500
WORKERS = 2
KILLS = 3


class Worker:
    """A ``switchboard worker`` process; ``ready`` once it reports that it runs."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.ready = asyncio.Event()
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.ready.clear()
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "switchboard",
            "worker",
            env=self.env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        self._reader = asyncio.create_task(self._read(self.proc))

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        async for line in proc.stderr:
            if b"worker running" in line:
                self.ready.set()

    async def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                self._reader.cancel()
                await self._reader


def _ids(receiver: Receiver) -> set[str]:
    return {r.headers["X-Platform-Delivery-Id"] for r in receiver.requests}


@pytest.mark.slow
@pytest.mark.long(seconds=50)
async def test_sigkilled_workers_deliver_every_event_at_least_once(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver, tmp_path: Path
) -> None:
    clock.set(dt.datetime.now(dt.UTC))
    await subscribe(runtime, org, receiver.url("/all"), ["*"])
    await subscribe(runtime, org, receiver.url("/calls"), ["call.started"])
    env = {
        **os.environ,
        "SWITCHBOARD_DATABASE_URL": runtime.settings.resolved_database_url,
        "SWITCHBOARD_DATA_DIR": str(tmp_path),
        "SWITCHBOARD_SECRET_KEY": TEST_SECRET,
        "SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE": "127.0.0.0/8",
        # Long enough that no attempt times out under a loaded suite: a timed-out attempt is
        # retried by design, and the duplicates counted below must come from the kills alone.
        "SWITCHBOARD_WEBHOOK_TIMEOUT": "10",
        "SWITCHBOARD_WEBHOOK_RETRY_DELAYS": "0.2,0.4,0.8",
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
    }
    workers = [Worker(env) for _ in range(WORKERS)]
    chaos = random.Random()
    try:
        for worker in workers:
            await worker.start()

        async def produce() -> None:
            for _ in range(EVENTS // 50):
                await fire(runtime, org, "call.started", count=50)

        def reached(target: int) -> Callable[[], bool]:
            return lambda: len(receiver.requests) >= target or len(_ids(receiver)) >= EVENTS * 2

        async def kill_randomly() -> None:
            for _ in range(KILLS):
                # Each kill lands at a random point of the flow, on a worker that is sending.
                target = len(receiver.requests) + chaos.randint(100, 600)
                await receiver.wait_for(reached(target), within=60)
                running = [w for w in workers if w.ready.is_set()]
                victim = chaos.choice(running or workers)
                await victim.kill()
                await victim.start()

        await asyncio.gather(produce(), kill_randomly())
        await receiver.wait_for(lambda: len(_ids(receiver)) >= EVENTS * 2, within=60)
    finally:
        for worker in workers:
            await worker.kill()

    async with runtime.db.transaction() as session:
        expected = {d.id for d in await session.scalars(select(Delivery))}
    assert len(expected) == EVENTS * 2
    received = [r.headers["X-Platform-Delivery-Id"] for r in receiver.requests]
    assert set(received) == expected, "an event was lost or invented"
    # Duplicates come only from attempts sent and not yet written back when a worker died.
    duplicates = len(received) - len(set(received))
    assert duplicates <= KILLS * MAX_LEASED
