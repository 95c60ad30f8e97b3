"""The bridge's HTTP side of protocol v1, against the bridge process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from switchboard.bridge import protocol
from tests.mediabridge.components import SECRET, SilentTrunk
from tests.mediabridge.conftest import Bridge

pytestmark = pytest.mark.slow


def dial_body(call_id: str, trunk_ids: list[str], attempt: int = 1) -> dict[str, Any]:
    return {
        "protocol": 1, "callId": call_id, "attempt": attempt, "tenant": "acme",
        "phone": "+14155550142", "displayName": "Acme", "trunkIds": trunk_ids,
        "voice": "Aoede", "language": "en-US", "model": "m", "maxSeconds": 60,
        "systemPrompt": "never logged", "apiKey": "AIza-never-logged",
        # nothing listens there: the events are retried, then given up
        "callbackUrl": "http://127.0.0.1:9/bridge.ashx/v1/events",
    }  # fmt: skip


@pytest.fixture
async def http(bridge: Bridge) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=bridge.process.url, timeout=10) as client:
        yield client


async def signed(
    http: httpx.AsyncClient, path: str, payload: dict[str, Any], secret: str = SECRET
) -> httpx.Response:
    body = orjson.dumps(payload)
    headers = {protocol.SIGNATURE_HEADER: protocol.sign(secret, body)}
    return await http.post(path, content=body, headers=headers)


async def test_health_is_unsigned(http: httpx.AsyncClient) -> None:
    response = await http.get("/v1/health")
    assert response.status_code == 200
    assert response.json()["protocol"] == 1
    assert response.json()["bridge"].startswith("bridge-")
    assert response.json()["registrations"] == {}  # no trunk of the module's registers
    assert response.json()["trunks"] == {}  # nor is pinged


async def test_bad_signatures_and_bodies_are_refused_and_place_nothing(
    http: httpx.AsyncClient, silent_trunk: SilentTrunk
) -> None:
    wrong = await signed(http, "/v1/calls", dial_body("oac-0000000000b1", ["silent"]), "nope")
    assert wrong.status_code == 401
    assert wrong.json()["error"] == "bad_signature"
    unsigned = await http.post("/v1/calls", json=dial_body("oac-0000000000b2", ["silent"]))
    assert unsigned.status_code == 401
    malformed = await signed(http, "/v1/calls", {"protocol": 1, "callId": "oac-0000000000b3"})
    assert malformed.status_code == 400
    assert set(malformed.json()) == {"error", "error_description"}
    other = await signed(
        http, "/v1/calls/oac-0000000000b4/status", {"protocol": 1, "callId": "x", "attempt": 1}
    )
    assert other.status_code == 400
    await asyncio.sleep(0.3)
    assert silent_trunk.received == []


async def test_a_dial_is_idempotent_and_hangup_while_ringing_cancels(
    http: httpx.AsyncClient, silent_trunk: SilentTrunk, bridge: Bridge
) -> None:
    body = dial_body("oac-0000000000c1", ["silent"])
    first = await signed(http, "/v1/calls", body)
    again = await signed(http, "/v1/calls", body)
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert first.json()["accepted"] is True
    # one INVITE, resent by timer A (50 ms, 100 ms, ...): one Call-ID only
    await asyncio.sleep(0.4)
    call_ids = {
        line for data in silent_trunk.received for line in data.split(b"\r\n")
        if line.lower().startswith(b"call-id:")
    }  # fmt: skip
    assert len(call_ids) == 1
    status = await signed(
        http, "/v1/calls/oac-0000000000c1/status",
        {"protocol": 1, "callId": "oac-0000000000c1", "attempt": 1},
    )  # fmt: skip
    assert status.json()["state"] == "ringing"
    hangup = await signed(
        http, "/v1/calls/oac-0000000000c1/hangup",
        {"protocol": 1, "callId": "oac-0000000000c1", "attempt": 1, "actor": "ops"},
    )  # fmt: skip
    assert hangup.json() == {"ok": True, "state": "ringing"}
    for _ in range(100):
        status = await signed(
            http, "/v1/calls/oac-0000000000c1/status",
            {"protocol": 1, "callId": "oac-0000000000c1", "attempt": 1},
        )  # fmt: skip
        if status.json()["state"] == "ended":
            break
        await asyncio.sleep(0.05)
    # the silent trunk sent no provisional: nothing to CANCEL, the attempt ends at once
    assert status.json()["ended"]["outcome"] == "cancelled"
    assert "never logged" not in bridge.process.output()
    assert "AIza-never-logged" not in bridge.process.output()


async def test_unknown_calls_are_unknown(http: httpx.AsyncClient) -> None:
    ref = {"protocol": 1, "callId": "oac-0000000000d1", "attempt": 1}
    status = await signed(http, "/v1/calls/oac-0000000000d1/status", ref)
    assert status.json() == {
        "callId": "oac-0000000000d1", "attempt": 1, "state": "unknown", "ended": None,
        "events": [],
    }  # fmt: skip
    hangup = await signed(http, "/v1/calls/oac-0000000000d1/hangup", {**ref, "actor": "ops"})
    assert hangup.json() == {"ok": True, "state": "unknown"}
