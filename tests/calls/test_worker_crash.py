"""A worker killed with SIGKILL mid-call: on restart every call reaches a final state once."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from httpx import AsyncClient
from sqlalchemy import text

from switchboard.kit.clock import iso_utc
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import ports
from tests.calls.conftest import Org
from tests.calls.helpers import events, place

FINAL = {"ended-success", "ended-failed-final", "cancelled"}
ENDINGS = ["00", "03", "06", "07", "00", "04", "02", "00", "06", "00"]


def _worker(settings: Settings, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "SWITCHBOARD_DATABASE_URL": settings.resolved_database_url,
        "SWITCHBOARD_DATA_DIR": str(settings.data_dir),
        "SWITCHBOARD_SECRET_KEY": settings.secret_key,
        "SWITCHBOARD_PUBLIC_BASE_URL": settings.public_base_url,
        "SWITCHBOARD_SIM_SPEED": "20",
        "SWITCHBOARD_CALL_LEASE_SECONDS": "1.5",
        "SWITCHBOARD_BRIDGE_URL": "",
        "SWITCHBOARD_LOG_LEVEL": "INFO",
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "switchboard", "worker"], env=env, stdout=out, stderr=out
        )


async def _statuses(runtime: Runtime) -> Counter[str]:
    async with runtime.db.transaction() as session:
        rows = await session.execute(text("SELECT status FROM calls"))
        return Counter(str(status) for (status,) in rows)


async def _wait_for(
    runtime: Runtime, done: Callable[[Counter[str]], bool], within: float
) -> Counter[str]:
    # Real processes at work: this test polls the database briefly, by design.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        statuses = await _statuses(runtime)
        if done(statuses):
            return statuses
        if loop.time() > deadline:
            raise AssertionError(f"timed out; statuses: {dict(statuses)}")
        await asyncio.sleep(0.1)


@pytest.mark.slow
async def test_kill_9_mid_call_loses_nothing(
    app_client: AsyncClient, runtime: Runtime, org: Org, settings: Settings, tmp_path: Path
) -> None:
    due = iso_utc(dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1))
    call_ids = [
        (await place(app_client, org.headers, phone=f"+141555502{ending}", maxSeconds=30,
                     scheduleAtUtc=due))["callId"]
        for ending in ENDINGS
    ]  # fmt: skip
    log = tmp_path / "worker.log"
    first = _worker(settings, log)
    try:
        await _wait_for(runtime, lambda s: s["in-flight"] >= 5, within=30)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert first.returncode == -signal.SIGKILL
    before = await _statuses(runtime)
    assert before["in-flight"] >= 1

    second = _worker(settings, log)
    try:
        final = await _wait_for(
            runtime, lambda s: sum(s[k] for k in FINAL) == len(call_ids), within=60
        )
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=15)
    assert sum(final.values()) == len(call_ids)
    assert "reconciled" in log.read_text()  # in-flight calls of the dead worker were taken over

    emitted = await events(runtime)
    finished = Counter(d["callId"] for n, d in emitted if n == "outbound-ai.finished")
    assert finished == dict.fromkeys(call_ids, 1), log.read_text()[-3000:]
    answered = Counter(d["callId"] for n, d in emitted if n == "call.answered")
    assert all(count == 1 for count in answered.values())
    saved = [d["callId"] for n, d in emitted if n == "transcript.saved"]
    assert len(saved) == len(set(saved))
    # every transcript.saved follows its call's terminal event
    for call_id in saved:
        names = [n for n, d in emitted if d.get("callId") == call_id]
        assert names.index("outbound-ai.finished") < names.index("transcript.saved")


# With an external bridge: `switchboard sim bridge` and `switchboard serve` as real processes.

OUTCOMES = {"00": "finished", "02": "voicemail", "03": "far-hangup", "04": "not-now",
            "06": "max-duration", "07": "transferred-to-vnum"}  # fmt: skip
BRIDGE_SECRET = "external-bridge-secret-for-tests"


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "switchboard", *args], env=env, stdout=out, stderr=out
        )


async def _answers(url: str, within: float = 90) -> None:
    """Wait until a freshly started process serves ``url``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    async with httpx.AsyncClient(timeout=1.0) as client:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(url)).status_code == 200:
                    return
            if loop.time() > deadline:
                raise AssertionError(f"{url} never answered")
            await asyncio.sleep(0.1)


@pytest.mark.slow
@pytest.mark.long(seconds=45)
async def test_kill_9_with_an_external_bridge_records_the_true_outcomes(
    app_client: AsyncClient, runtime: Runtime, org: Org, settings: Settings, tmp_path: Path
) -> None:
    bridge_port, api_port = ports.free_port(), ports.free_port()
    base = {
        **os.environ,
        "SWITCHBOARD_BRIDGE_SECRET": BRIDGE_SECRET,
        "SWITCHBOARD_SIM_SPEED": "20",
        "SWITCHBOARD_LOG_LEVEL": "INFO",
    }
    platform_env = {
        **base,
        "SWITCHBOARD_DATABASE_URL": settings.resolved_database_url,
        "SWITCHBOARD_DATA_DIR": str(settings.data_dir),
        "SWITCHBOARD_SECRET_KEY": settings.secret_key,
        "SWITCHBOARD_PUBLIC_BASE_URL": f"http://127.0.0.1:{api_port}",
        "SWITCHBOARD_BRIDGE_URL": f"http://127.0.0.1:{bridge_port}",
        "SWITCHBOARD_CALL_LEASE_SECONDS": "1.5",
    }
    bridge_log, api_log = tmp_path / "bridge.log", tmp_path / "api.log"
    due = iso_utc(dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1))
    call_ids = {
        (await place(app_client, org.headers, phone=f"+141555503{ending}", maxSeconds=30,
                     scheduleAtUtc=due))["callId"]: ending
        for ending in ENDINGS
    }  # fmt: skip
    bridge = _spawn(["sim", "bridge", "--port", str(bridge_port)], base, bridge_log)
    api = _spawn(["serve", "--port", str(api_port)], platform_env, api_log)
    try:
        await _answers(f"http://127.0.0.1:{bridge_port}/v1/health")
        await _wait_for(runtime, lambda s: s["in-flight"] >= 5, within=90)
        api.send_signal(signal.SIGKILL)  # the API and its workers: no callback gets through
        api.wait()
        in_flight = (await _statuses(runtime))["in-flight"]
        assert in_flight >= 1
        # Real processes at work: wait until the bridge gave up posting the lost callbacks.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 45
        while bridge_log.read_text().count("giving up on callback") < in_flight:
            assert loop.time() < deadline, bridge_log.read_text()[-2000:]
            await asyncio.sleep(0.2)

        api = _spawn(["serve", "--port", str(api_port)], platform_env, api_log)
        await _wait_for(runtime, lambda s: sum(s[k] for k in FINAL) == len(call_ids), within=120)
    finally:
        for process in (api, bridge):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    for call_id, ending in call_ids.items():
        record = (await app_client.get(f"/api.ashx/v1/calls/{call_id}", headers=org.headers)).json()
        assert (record["endedReason"], record["errorDetail"]) == (OUTCOMES[ending], ""), record
        assert record["answeredAtUtc"]
        names = [n for n, _ in await events(runtime, call_id)]
        assert names[:2] == ["call.answered", "call.started"], (call_id, names)
        assert names.count("outbound-ai.finished") == 1
        assert names[-2:] == ["outbound-ai.finished", "transcript.saved"], (call_id, names)
        finished = dict(await events(runtime, call_id))["outbound-ai.finished"]
        assert (finished["outcome"], finished["answered"]) == (OUTCOMES[ending], True)
    # The true outcomes reached the platform by one of three ways, depending on where each call
    # stood at the kill and when the new API came up: reconciliation applied the events in the
    # bridge's log, it closed the attempt with the bridge's figures, or the bridge re-posted the
    # events it had given up on ahead of the call's next one. Which of them a run sees is up to
    # the timing of real processes, so the test holds the outcomes, not the route they took.
