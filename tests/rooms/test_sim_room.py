"""``switchboard sim room``: a crowd of real aiortc peers in a room of a running server; two of
three report stressed statistics, so the detector fires and the room moves to the SFU."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from switchboard.cli import main
from switchboard.platform.webhooks.tasks import deliver_due
from switchboard.runtime import Runtime
from tests import factories
from tests.rooms.conftest import Server
from tests.rooms.test_cascade import named
from tests.webhooks.conftest import Receiver, deliver_until

# the events the run must leave, at least (three joins and leaves, the detector and the promote)
EXPECTED = {"room.peer.joined": 3, "room.peer.left": 3, "room.bandwidth.degraded": 1,
            "room.cascade.promoted": 1}  # fmt: skip


@pytest.mark.slow
async def test_stressed_peers_fire_the_detector_and_the_bandwidth_promote(
    server: Server, acme: factories.TenantFixture, hooks: Any, cli: CliRunner, runtime: Runtime,
    receiver: Receiver,
) -> None:  # fmt: skip
    url = f"http://127.0.0.1:{server.port}"
    args = ["sim", "room", "--tenant", "acme", "--room", "crowd", "--peers", "3",
            "--stressed", "2", "--hold", "8", "--url", url, "--json"]  # fmt: skip

    result = await asyncio.to_thread(cli.invoke, main, args)

    assert result.exit_code == 0, result.output
    summary = orjson.loads(result.stdout)
    assert (summary["room"], summary["peers"], summary["joined"]) == ("crowd", 3, 3)
    assert summary["modes"] == ["mesh", "sfu"]
    assert summary["errors"] == []
    assert summary["framesReceived"] > 0
    progress = result.stderr.splitlines()
    assert "joined 3/3" in progress
    assert "2 of 3 peers report stressed statistics" in progress
    assert progress.index("mode mesh") < progress.index("mode sfu")
    assert progress[-1] == "left: 3 peers"

    while await deliver_due(runtime):  # everything the run left, so that extras would show
        pass

    def complete(bodies: list[dict[str, Any]]) -> bool:  # a lost attempt retried included
        names = [b["event"] for b in bodies]
        return all(names.count(name) >= count for name, count in EXPECTED.items())

    events = await deliver_until(runtime, receiver, complete)
    joined = named(events, "room.peer.joined")
    assert sorted(e["name"] for e in joined) == ["sim-1", "sim-2", "sim-3"]
    assert all(e["role"] == "human" and e["verified"] is False for e in joined)
    [degraded] = named(events, "room.bandwidth.degraded")
    assert degraded == {
        "room": "crowd", "stressedCount": 2, "peerCount": 3, "humanCount": 3, "windowSec": 30,
        "triggerPeerId": degraded["triggerPeerId"],
        "sampleMetrics": {"abrMbps": 0.5, "lossPct": 8.0, "rttMs": 450.0},
    }  # fmt: skip
    assert named(events, "room.cascade.promoted") == [{
        "room": "crowd", "mode": "sfu", "reason": "auto-promote-bandwidth-degraded-stressed-2-of-3",
        "trigger": "auto-bandwidth", "humanCount": 3, "stressedCount": 2, "peerCount": 3,
    }]  # fmt: skip
    assert sorted(e["peerCount"] for e in named(events, "room.peer.left")) == [0, 1, 2]
