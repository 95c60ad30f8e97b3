"""A bridge killed mid-call: the restarted bridge no longer knows the call (``unknown``) and the
platform's reconciliation closes the attempt as documented (docs/calls.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from switchboard.kit.clock import ManualClock
from switchboard.platform.calls.tasks import LOST_DETAIL, reconcile
from tests.mediabridge.components import BridgeProcess, Sipp, free_port
from tests.mediabridge.conftest import Platform

pytestmark = pytest.mark.slow


@pytest.fixture
def crash_bridge(tmp_path: Path) -> Iterator[BridgeProcess]:
    port = free_port()
    trunks = tmp_path / "trunks.toml"
    trunks.write_text(f'[trunks.carrier]\nuri = "sip:127.0.0.1:{port}"\n')
    process = BridgeProcess(trunks=trunks)
    process.carrier_port = port  # type: ignore[attr-defined]
    process.start(tmp_path)
    yield process
    process.kill()


@pytest.fixture
def bridge_url(crash_bridge: BridgeProcess) -> str:
    """The platform dials this test's own bridge, which the test kills."""
    return crash_bridge.url


async def test_a_killed_bridge_is_reconciled_as_lost(
    platform: Platform, crash_bridge: BridgeProcess, tmp_path: Path
) -> None:
    sipp = await Sipp("uas_talk.xml", crash_bridge.carrier_port).start(  # type: ignore[attr-defined]
        tmp_path, extra=["-mi", "127.0.0.1"]
    )
    try:
        await platform.route("+14155550177", ["carrier"])
        call_id = await platform.place("+14155550177")
        for _ in range(200):
            record = await platform.record(call_id)
            if record["answeredAtUtc"]:
                break
            await asyncio.sleep(0.05)
        assert record["status"] == "in-flight"
        assert record["answeredAtUtc"]
        # started without the platform's address: it says what that costs, once
        assert crash_bridge.output().count("no --platform-url") == 1
        crash_bridge.kill()
        crash_bridge.start(tmp_path)  # the same ports, a fresh process with no calls
        clock = platform.runtime.clock
        assert isinstance(clock, ManualClock)
        clock.advance(platform.runtime.settings.call_lease_seconds + 1)
        assert await reconcile(platform.runtime, owner="test-reconciler") == 1
        record = await platform.record(call_id)
        assert record["status"] == "ended-failed-final"  # answered: never retried
        assert record["errorDetail"] == LOST_DETAIL
        assert await reconcile(platform.runtime, owner="test-reconciler") == 0
    finally:
        crash_bridge.kill()
        await sipp.stop()
