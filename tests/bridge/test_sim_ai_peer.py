"""``POST /v1/rooms/ai-peer`` on the simulated bridge: refusals like the other room paths, an
unreachable room reported as a failed call, and the scripted conversation cut at
``maxSeconds`` (the media itself: tests/rooms/test_vnum_simulated.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import orjson
import pytest

from switchboard.bridge import protocol
from switchboard.bridge.scenarios import inbound_script
from switchboard.bridge.simulator import SimulatedBridge
from switchboard.kit.clock import ManualClock
from tests.ports import free_port

SECRET = "sim-secret"


def _request(**changes: object) -> dict[str, object]:
    body: dict[str, object] = {
        "protocol": protocol.PROTOCOL_VERSION, "tenant": "acme", "room": "desk",
        "callId": "vnum-1", "signalUrl": "ws://127.0.0.1:1/signal.ashx?room=desk",
        "joinToken": "rjt.x.y", "callbackUrl": "http://platform.test/bridge.ashx/v1/events",
        "number": "+4930555020", "name": "Front desk", "maxSeconds": 60,
    }  # fmt: skip
    body.update(changes)
    return body


async def _post(
    bridge: SimulatedBridge, body: dict[str, object], *, secret: str = SECRET
) -> httpx.Response:
    raw = orjson.dumps(body)
    headers = {protocol.SIGNATURE_HEADER: protocol.sign(secret, raw)}
    transport = httpx.ASGITransport(app=bridge.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://sim") as client:
        return await client.post(protocol.ROOM_AI_PEER_PATH, content=raw, headers=headers)


@pytest.fixture
async def callbacks() -> list[dict[str, object]]:
    return []


@pytest.fixture
async def bridge(callbacks: list[dict[str, object]]) -> AsyncIterator[SimulatedBridge]:
    def receive(request: httpx.Request) -> httpx.Response:
        callbacks.append(orjson.loads(request.content))
        return httpx.Response(200, json={"ok": True})

    client = httpx.AsyncClient(transport=httpx.MockTransport(receive))
    simulator = SimulatedBridge(
        secret=SECRET, speed=1000.0, clock=ManualClock(), callback_client=client
    )
    yield simulator
    await simulator.aclose()


async def test_a_bad_signature_or_request_is_refused_and_starts_nothing(
    bridge: SimulatedBridge,
) -> None:
    refused = await _post(bridge, _request(), secret="not-the-secret")
    assert refused.status_code == 401
    assert refused.json()["code"] == "bad_signature"
    assert refused.json()["phase"] == "ai-peer"
    invalid = await _post(bridge, _request(callId=None))
    assert (invalid.status_code, invalid.json()["code"]) == (400, "invalid_request")
    newer = await _post(bridge, _request(protocol=protocol.PROTOCOL_VERSION + 1))
    assert (newer.status_code, newer.json()["code"]) == (400, "invalid_request")
    assert not bridge.busy


async def test_a_room_out_of_reach_ends_the_call_with_its_reason(
    bridge: SimulatedBridge, callbacks: list[dict[str, object]]
) -> None:
    closed = f"ws://127.0.0.1:{free_port()}/signal.ashx?room=desk"
    started = await _post(bridge, _request(signalUrl=closed))
    assert (started.status_code, started.json()) == (200, {})
    async with asyncio.timeout(10):
        await bridge.wait_idle()
    [ended] = callbacks
    assert ended["type"] == "inbound-ended"
    assert (ended["callId"], ended["source"], ended["room"]) == ("vnum-1", "vnum", "desk")
    fields = ended["ended"]
    assert isinstance(fields, dict)
    assert fields["answered"] is False
    assert fields["talkSec"] == 0
    assert "signaling failed" in fields["errorDetail"]


def test_the_inbound_script_stops_at_max_seconds() -> None:
    full = inbound_script(prompt="Front desk.", display_name="Desk", sip=False, outcome="finished")
    assert full.steps[-1].outcome == "finished"
    cut = inbound_script(
        prompt="Front desk.", display_name="Desk", sip=False, outcome="finished", max_seconds=8
    )
    assert [s.kind for s in cut.steps] == ["ai-started", "turn", "ended"]
    assert (cut.steps[-1].at, cut.steps[-1].outcome) == (8, "max-duration")
    assert all(s.at <= 8 for s in cut.steps)
    long_enough = inbound_script(
        prompt="Front desk.", display_name="Desk", sip=False, outcome="finished",
        max_seconds=3600,
    )  # fmt: skip
    assert long_enough.steps == full.steps
