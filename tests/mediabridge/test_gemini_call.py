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

from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant
from tests.calls.helpers import call_body
from tests.mediabridge.components import BridgeProcess, Sipp, free_port
from tests.mediabridge.conftest import Platform
from tests.mediabridge.engines.live_endpoint import (
    BAD_KEY_REASON,
    INTERRUPTED,
    TURN_COMPLETE,
    AwaitAudio,
    AwaitClientContent,
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
from tests.webhooks.conftest import Receiver, deliver_until, subscribe

pytestmark = pytest.mark.slow

KEY = str(call_body()["apiKey"])
MODEL = "gemini-live-test"
FRONT_DESK = "You are the front desk of Hotel Linden. Be brief."
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

    return await deliver_until(
        platform.runtime, receiver,
        lambda bodies: sorted(b["event"] for b in bodies) == sorted(names), path="/hooks",
    )  # fmt: skip


async def call_through_sipp(
    platform: Platform, bridge: BridgeProcess, tmp_path: Path, scenario: str, number: str,
    **place: Any,
) -> tuple[str, dict[str, Any]]:  # fmt: skip
    """Route ``number`` to the bridge's carrier trunk, where a sipp callee runs ``scenario``;
    place the call and wait until it ended and sipp's scenario passed (it saw its BYE)."""
    port: int = bridge.carrier_port  # type: ignore[attr-defined]
    callee = await Sipp(scenario, port).start(tmp_path, extra=["-mi", "127.0.0.1"])
    try:
        async with asyncio.timeout(45):
            await platform.route(number, ["carrier"])
            call_id = await platform.place(number, **place)
            record = await platform.ended(call_id, within=30)
            exit_code = await callee.exit_code(within=10)
            assert exit_code == 0, callee.log.read_text()  # type: ignore[union-attr]
    finally:
        await callee.stop()
    return call_id, record


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
    call_id, record = await call_through_sipp(
        platform, gemini_bridge, tmp_path, "uas_talk.xml", "+14155550160", model=MODEL, voice="Puck"
    )

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


async def test_a_transfer_the_far_end_accepts_hands_the_call_on(
    platform: Platform, gemini_bridge: BridgeProcess, live: LiveEndpoint, receiver: Receiver,
    tmp_path: Path,
) -> None:  # fmt: skip
    live.scripts = [[
        AwaitAudio(0.4),
        Send(said("Caller", "Can I talk to the manager?")),
        Send(audio(tone(440, 24000, 0.4))),
        Send(said("AI", "Of course, I am putting you through.")), Send(TURN_COMPLETE),
        Send(tool_call("transfer_call", target="+4930123456")),
        AwaitToolResponse(),
    ]]  # fmt: skip
    await subscribe(platform.runtime, platform.fixture, receiver.url("/hooks"), CALL_EVENTS)
    # sipp answers the REFER with 202 and a NOTIFY whose sipfrag is "SIP/2.0 200 OK"; its
    # scenario fails unless Refer-To is <sip:+4930123456@127.0.0.1:port> (the trunk)
    call_id, record = await call_through_sipp(
        platform, gemini_bridge, tmp_path, "uas_refer_accept.xml", "+14155550161", model=MODEL
    )

    assert (record["status"], record["endedReason"], record["errorDetail"]) == (
        "ended-success", "transferred-to-vnum", "",
    )  # fmt: skip
    hooks = await delivered(platform, receiver, CALL_EVENTS)
    transferred = next(b["data"] for b in hooks if b["event"] == "call.transferred")
    assert transferred == {
        "callId": call_id, "fromOutbound": call_id, "fromPhone": "+14155550161",
        "toPhone": "+4930123456", "transferType": "outbound-to-user", "trunkId": "carrier",
        "source": "outbound-ai",
    }  # fmt: skip
    finished = next(b["data"] for b in hooks if b["event"] == "outbound-ai.finished")
    assert finished["outcome"] == "transferred-to-vnum"


async def test_a_refused_transfer_keeps_the_caller_on_the_line(
    platform: Platform, gemini_bridge: BridgeProcess, live: LiveEndpoint, receiver: Receiver,
    tmp_path: Path,
) -> None:  # fmt: skip
    live.scripts = [[
        AwaitAudio(0.4),
        Send(tool_call("transfer_call", target="reception")),
        AwaitToolResponse(),
        AwaitClientContent(),  # the bridge tells the model the transfer failed
        Send(audio(tone(440, 24000, 0.4))),
        Send(said("AI", "I am sorry, nobody is free. Goodbye.")), Send(TURN_COMPLETE),
        Send(tool_call("end_call", outcome="finished")),
    ]]  # fmt: skip
    await subscribe(platform.runtime, platform.fixture, receiver.url("/hooks"), CALL_EVENTS)
    _, record = await call_through_sipp(
        platform, gemini_bridge, tmp_path, "uas_refer_refuse.xml", "+14155550162", model=MODEL
    )

    assert (record["status"], record["endedReason"], record["errorDetail"]) == (
        "ended-success", "finished", "",
    )  # fmt: skip
    told = live.connections[0].client_content[0]["turns"]
    assert "603 Decline" in orjson.dumps(told).decode()
    hooks = await delivered(platform, receiver, [e for e in CALL_EVENTS if e != "call.transferred"])
    assert "call.transferred" not in [b["event"] for b in hooks]


async def test_a_voicemail_gets_the_tenants_message_and_a_prompt_slug_its_text(
    platform: Platform, gemini_bridge: BridgeProcess, live: LiveEndpoint, tmp_path: Path
) -> None:
    message = "This is Hotel Linden about your booking, please call us back."
    async with platform.runtime.db.transaction() as session:
        tenant = await session.get(Tenant, platform.tenant_id)
        assert tenant is not None
        await tenants.set_setting(session, tenant, "Voicemail:Message", message)
        await tenants.set_setting(session, tenant, "Prompts:front-desk", FRONT_DESK)
    live.scripts = [[
        AwaitAudio(0.4),
        Send(said("Caller", "Please leave a message after the tone.")),
        Send(audio(tone(440, 24000, 1.0))),
        Send(said("AI", message)), Send(TURN_COMPLETE),
        Send(tool_call("end_call", outcome="voicemail")),
        AwaitToolResponse(),
    ]]  # fmt: skip
    call_id, record = await call_through_sipp(
        platform,
        gemini_bridge,
        tmp_path,
        "uas_talk.xml",
        "+14155550163",
        model=MODEL,
        systemPrompt="front-desk",
    )

    instruction = live.connections[0].setup["systemInstruction"]["parts"][0]["text"]
    assert instruction.startswith(FRONT_DESK)  # the slug's text, not the slug
    assert message in instruction
    assert (record["endedReason"], record["errorDetail"]) == ("voicemail", "")
    response = await platform.http.get(
        f"/api.ashx/v1/transcripts/{call_id}", headers=platform.headers
    )
    turns = [(t["speaker"], t["text"]) for t in response.json()["turns"]]
    assert ("AI", message) in turns


async def test_barge_in_and_go_away_keep_the_call_and_not_now_ends_it(
    platform: Platform, gemini_bridge: BridgeProcess, live: LiveEndpoint, tmp_path: Path
) -> None:
    """The caller talks over the model (``interrupted``), the service asks the session to move
    (``goAway``): the bridge resumes with the latest handle on the same SIP call, and the model's
    ``end_call(not-now)`` ends it."""
    live.scripts = [
        [
            Send({"sessionResumptionUpdate": {"newHandle": "handle-1", "resumable": True}}),
            AwaitAudio(0.3),
            Send(audio(tone(500, 24000, 3.0))), Send(said("AI", "Let me tell you about")),
            AwaitAudio(0.3),
            Send(INTERRUPTED), Send(said("Caller", "Not now, thanks.")), Send(TURN_COMPLETE),
            Send({"goAway": {"timeLeft": "5s"}}),
        ],
        [
            AwaitAudio(0.3),
            Send(audio(tone(440, 24000, 0.4))), Send(said("AI", "Of course. Goodbye!")),
            Send(TURN_COMPLETE), Send(usage(30, 60)),
            Send(tool_call("end_call", outcome="not-now")),
            AwaitToolResponse(),
        ],
    ]  # fmt: skip
    call_id, record = await call_through_sipp(
        platform, gemini_bridge, tmp_path, "uas_talk.xml", "+14155550164", model=MODEL
    )

    assert (record["endedReason"], record["errorDetail"]) == ("not-now", "")
    assert len(live.connections) == 2  # one SIP call, two Live sessions
    assert live.connections[1].setup["sessionResumption"] == {"handle": "handle-1"}
    assert live.connections[1].audio_seconds >= 0.3  # the caller's audio reached the new one
    response = await platform.http.get(
        f"/api.ashx/v1/transcripts/{call_id}", headers=platform.headers
    )
    assert [(t["speaker"], t["text"]) for t in response.json()["turns"]] == [
        ("AI", "Let me tell you about"),
        ("Caller", "Not now, thanks."),
        ("AI", "Of course. Goodbye!"),
    ]


async def test_a_bad_key_is_a_technical_failure_that_names_the_cause_not_the_key(
    platform: Platform, gemini_bridge: BridgeProcess, live: LiveEndpoint, tmp_path: Path
) -> None:
    wrong = "AIzaWRONG-key-that-must-not-leak"
    live.scripts = [[]]
    _, record = await call_through_sipp(
        platform, gemini_bridge, tmp_path, "uas_talk.xml", "+14155550165", model=MODEL, apiKey=wrong
    )

    assert record["endedReason"] != "finished"
    assert BAD_KEY_REASON in record["errorDetail"]
    assert wrong not in record["errorDetail"]
    assert "\n" not in record["errorDetail"]
    assert wrong not in gemini_bridge.output()
