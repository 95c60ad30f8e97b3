"""The Gemini Live engine end to end: the platform (a real port) dials the bridge process
(``--engine gemini``), which places a SIP call to a talking sipp callee and runs the
conversation through the real SDK against the local Live endpoint (TLS, trusted through
``SWITCHBOARD_GEMINI_CA_FILE``). The transcript is read over HTTP, the webhooks at a real
receiver."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from switchboard.platform.webhooks.tasks import deliver_due
from tests.calls.helpers import call_body
from tests.mediabridge.components import BridgeProcess, Sipp, free_port
from tests.mediabridge.conftest import Platform
from tests.mediabridge.engines.live_endpoint import (
    TURN_COMPLETE,
    AwaitAudio,
    AwaitToolResponse,
    LiveEndpoint,
    Send,
    audio,
    running,
    said,
    self_signed,
    tool_call,
    usage,
)
from tests.mediabridge.engines.test_resample import tone
from tests.webhooks.conftest import Receiver, subscribe

pytestmark = pytest.mark.slow

KEY = str(call_body()["apiKey"])
MODEL = "gemini-live-test"
CALL_EVENTS = [
    "call.answered", "call.started", "call.transferred", "outbound-ai.finished",
    "transcript.saved",
]  # fmt: skip


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[LiveEndpoint]:
    """The local Live endpoint; a test sets its ``scripts`` before it places the call."""
    cert, key = self_signed(tmp_path)
    async with running(LiveEndpoint(KEY, []), cert, key) as endpoint:
        endpoint.cert = cert  # type: ignore[attr-defined]
        yield endpoint


@pytest.fixture
def gemini_bridge(tmp_path: Path, live: LiveEndpoint) -> Iterator[BridgeProcess]:
    port = free_port()
    trunks = tmp_path / "trunks.toml"
    trunks.write_text(f'[trunks.carrier]\nuri = "sip:127.0.0.1:{port}"\n')
    env = {
        "SWITCHBOARD_GEMINI_BASE_URL": live.base_url,
        "SWITCHBOARD_GEMINI_CA_FILE": str(live.cert),  # type: ignore[attr-defined]
    }
    process = BridgeProcess(trunks=trunks, engine="gemini", env=env)
    process.carrier_port = port  # type: ignore[attr-defined]
    process.start(tmp_path)
    yield process
    process.kill()


@pytest.fixture
def bridge_url(gemini_bridge: BridgeProcess) -> str:
    return gemini_bridge.url


async def delivered(
    platform: Platform, receiver: Receiver, names: list[str]
) -> list[dict[str, Any]]:
    """Deliver the due webhooks until ``names`` (in any order) reached the receiver."""

    def bodies() -> list[dict[str, Any]]:
        return [orjson.loads(r.body) for r in receiver.at("/hooks")]

    async with asyncio.timeout(20):
        while sorted(b["event"] for b in bodies()) != sorted(names):
            if not await deliver_due(platform.runtime):
                await asyncio.sleep(0.05)
    return bodies()


async def test_a_gemini_call_end_to_end(
    platform: Platform, gemini_bridge: BridgeProcess, live: LiveEndpoint, receiver: Receiver,
    tmp_path: Path,
) -> None:  # fmt: skip
    live.scripts = [[
        AwaitAudio(0.4),
        Send(said("Caller", "Hello?")),
        Send(audio(tone(440, 24000, 1.0))),
        Send(said("AI", "Good morning, this is Hotel Linden.")),
        Send(TURN_COMPLETE), Send(usage(120, 180)),
        AwaitAudio(1.6),
        Send(said("Caller", "Thanks, that is all.")),
        Send(audio(tone(440, 24000, 0.4))),
        Send(said("AI", "Goodbye!")), Send(TURN_COMPLETE), Send(usage(40, 90)),
        Send(tool_call("end_call", outcome="finished")),
        AwaitToolResponse(),
    ]]  # fmt: skip
    await subscribe(platform.runtime, platform.fixture, receiver.url("/hooks"), CALL_EVENTS)
    port: int = gemini_bridge.carrier_port  # type: ignore[attr-defined]
    callee = await Sipp("uas_talk.xml", port).start(tmp_path, extra=["-mi", "127.0.0.1"])
    try:
        async with asyncio.timeout(45):
            await platform.route("+14155550160", ["carrier"])
            call_id = await platform.place("+14155550160", model=MODEL, voice="Puck")
            record = await platform.ended(call_id, within=30)
            assert await callee.exit_code(within=10) == 0  # sipp saw its BYE
    finally:
        await callee.stop()

    assert (record["status"], record["endedReason"], record["errorDetail"]) == (
        "ended-success", "finished", "",
    )  # fmt: skip
    response = await platform.http.get(
        f"/api.ashx/v1/transcripts/{call_id}", headers=platform.headers
    )
    assert response.status_code == 200, response.text
    transcript = response.json()
    assert [(t["speaker"], t["text"]) for t in transcript["turns"]] == [
        ("Caller", "Hello?"),
        ("AI", "Good morning, this is Hotel Linden."),
        ("Caller", "Thanks, that is all."),
        ("AI", "Goodbye!"),
    ]
    assert transcript["tokensTotal"] == 270
    listed = await platform.http.get("/api.ashx/v1/transcripts", headers=platform.headers)
    item = next(i for i in listed.json()["data"] if i["callId"] == call_id)
    assert (item["tokensPrompt"], item["tokensTotal"], item["turnCount"]) == (160, 270, 4)
    assert (transcript["outcome"], transcript["model"], transcript["voice"]) == (
        "finished", MODEL, "Puck",
    )  # fmt: skip

    # the setup the bridge sent, and the caller's audio that reached the model
    connection = live.connections[0]
    assert connection.setup["model"] == f"models/{MODEL}"
    assert connection.audio_seconds >= 1.6
    assert connection.tool_responses

    hooks = await delivered(platform, receiver, [e for e in CALL_EVENTS if e != "call.transferred"])
    finished = next(b["data"] for b in hooks if b["event"] == "outbound-ai.finished")
    assert (finished["outcome"], finished["answered"]) == ("finished", True)
    assert (finished["inputTurns"], finished["outputTurns"]) == (2, 2)
    assert KEY not in gemini_bridge.output()
