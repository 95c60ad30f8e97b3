"""Real ``switchboard worker`` processes killed with SIGKILL while events flow: afterwards every
event has been delivered at least once, and duplicates stay within what was in flight."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from switchboard.kit.clock import ManualClock
from switchboard.platform.webhooks.models import Delivery
from switchboard.platform.webhooks.tasks import MAX_IN_FLIGHT
from switchboard.runtime import Runtime
from tests.conftest import TEST_SECRET
from tests.factories import TenantFixture
from tests.webhooks.conftest import Receiver, fire, subscribe

EVENTS = 1500
WORKERS = 2
KILLS = 5


def _spawn(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "switchboard", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _ids(receiver: Receiver) -> set[str]:
    return {r.headers["X-Platform-Delivery-Id"] for r in receiver.requests}


@pytest.mark.slow
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
        "SWITCHBOARD_WEBHOOK_TIMEOUT": "1",
        "SWITCHBOARD_WEBHOOK_RETRY_DELAYS": "0.2,0.4,0.8",
        "SWITCHBOARD_LOG_LEVEL": "ERROR",
    }
    workers = [_spawn(env) for _ in range(WORKERS)]
    chaos = random.Random()
    try:

        async def produce() -> None:
            for _ in range(EVENTS // 50):
                await fire(runtime, org, "call.started", count=50)
                await asyncio.sleep(0)

        async def kill_randomly() -> None:
            for _ in range(KILLS):
                # Each kill lands at a random point of the flow, while deliveries are moving.
                target = len(receiver.requests) + chaos.randint(50, 400)
                await receiver.wait_for(
                    lambda target=target: (
                        len(receiver.requests) >= target or len(_ids(receiver)) >= EVENTS * 2
                    ),
                    within=60,
                )
                victim = chaos.randrange(WORKERS)
                workers[victim].send_signal(signal.SIGKILL)
                await asyncio.to_thread(workers[victim].wait)
                workers[victim] = _spawn(env)

        import time

        t0 = time.monotonic()
        await asyncio.gather(produce(), kill_randomly())
        print("produced+killed", time.monotonic() - t0, len(receiver.requests))
        await receiver.wait_for(lambda: len(_ids(receiver)) >= EVENTS * 2, within=60)
    finally:
        for proc in workers:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(proc.wait)

    async with runtime.db.transaction() as session:
        expected = {d.id: d.subscription_id for d in await session.scalars(select(Delivery))}
    assert len(expected) == EVENTS * 2
    received = [r.headers["X-Platform-Delivery-Id"] for r in receiver.requests]
    assert set(received) == set(expected), "an event was lost or invented"
    duplicates = len(received) - len(set(received))
    print(f"duplicates={duplicates}", time.monotonic() - t0)
    assert duplicates <= KILLS * MAX_IN_FLIGHT
