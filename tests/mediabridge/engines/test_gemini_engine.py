"""The Gemini Live adapter, through the real ``google-genai`` SDK, against the local Live
endpoint over TLS: setup, audio both ways, transcripts, barge-in, tools, goAway, errors."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from switchboard.mediabridge.engines import create_engine
from switchboard.mediabridge.engines.base import (
    FRAME_BYTES,
    Conversation,
    EndCall,
    EngineError,
    TransferCall,
)
from switchboard.mediabridge.engines.gemini import (
    CLOSING_REQUEST,
    GeminiEndpoint,
    GeminiEngine,
    GeminiSession,
)
from tests.mediabridge.engines.live_endpoint import (
    BAD_KEY_REASON,
    INTERRUPTED,
    TURN_COMPLETE,
    AwaitAudio,
    AwaitClientContent,
    AwaitToolResponse,
    LiveEndpoint,
    Send,
    Step,
    audio,
    running,
    said,
    self_signed,
    tool_call,
    usage,
)
from tests.mediabridge.engines.test_resample import spectrum_peak, tone

pytestmark = pytest.mark.slow

KEY = "AIzaTEST-the-callers-own-key-0123456789"
PROMPT = "You are the front desk of Hotel Linden. Be brief."
T0 = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
WAIT_SEC = 10.0


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("live-tls"))


class Harness:
    def __init__(self, certificate: tuple[Path, Path]) -> None:
        self.cert, self.key = certificate
        self.trust = ssl.create_default_context(cafile=str(self.cert))

    def engine(self, endpoint: LiveEndpoint) -> GeminiEngine:
        where = GeminiEndpoint(base_url=endpoint.base_url, ssl_context=self.trust)
        return GeminiEngine(endpoint=where, now=lambda: T0)


@pytest.fixture
def harness(certificate: tuple[Path, Path]) -> Harness:
    return Harness(certificate)


def conversation(api_key: str = KEY, model: str = "gemini-live-test") -> Conversation:
    return Conversation(
        call_id="oac-0123456789ab", direction="outbound", model=model,
        voice="Charon", language="de-DE", max_seconds=600, system_prompt=PROMPT,
        api_key=api_key,
    )  # fmt: skip


async def eventually(predicate: Callable[[], bool], what: str) -> None:
    """Wait for the real endpoint and the session's tasks to get there (bounded)."""
    deadline = time.monotonic() + WAIT_SEC
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


CALLER = tone(1000, 8000, 2.0)


def feed(session: GeminiSession, frames: int, start: int = 0) -> int:
    for i in range(start, start + frames):
        offset = i * FRAME_BYTES % len(CALLER)
        session.feed(CALLER[offset : offset + FRAME_BYTES])
    return start + frames


def drain(session: GeminiSession) -> list[bytes]:
    frames = []
    while (frame := session.next_frame()) is not None:
        frames.append(frame)
    return frames


@contextlib.asynccontextmanager
async def started(
    harness: Harness, endpoint: LiveEndpoint, api_key: str = KEY
) -> AsyncIterator[GeminiSession]:
    async with running(endpoint, harness.cert, harness.key):
        session = harness.engine(endpoint).session(conversation(api_key))
        await session.start()
        try:
            yield session
        finally:
            await session.finish("cancelled")


def script(*steps: Step) -> list[Step]:
    return list(steps)


async def test_a_conversation_streams_audio_both_ways_and_records_the_turns(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    endpoint = LiveEndpoint(KEY, [script(
        AwaitAudio(0.5),
        Send(said("Caller", "Hello, is this ")), Send(said("Caller", "the hotel?")),
        Send(audio(tone(1000, 24000, 1.0))),
        Send(said("AI", "Yes, this is ")), Send(said("AI", "Hotel Linden.")),
        Send(TURN_COMPLETE), Send(usage(120, 180)),
    )])  # fmt: skip
    async with started(harness, endpoint) as session:
        feed(session, 30)  # 0.6 s of the caller
        await eventually(lambda: session.record.tokens_total > 0, "the model's turn")
        played = drain(session)
        record = await session.finish("far-hangup")

    setup = endpoint.connections[0].setup
    assert setup["model"] == "models/gemini-live-test"
    assert setup["generationConfig"]["responseModalities"] == ["AUDIO"]
    speech = setup["generationConfig"]["speechConfig"]
    assert speech["voiceConfig"]["prebuiltVoiceConfig"]["voiceName"] == "Charon"
    assert speech["languageCode"] == "de-DE"
    instruction = setup["systemInstruction"]["parts"][0]["text"]
    assert instruction.startswith(PROMPT)
    assert "voicemail" in instruction
    names = [f["name"] for f in setup["tools"][0]["functionDeclarations"]]
    assert names == ["end_call", "transfer_call"]
    assert setup["inputAudioTranscription"] == {} == setup["outputAudioTranscription"]
    assert "sessionResumption" in setup

    sent = endpoint.connections[0]
    assert sent.mime_types == {"audio/pcm;rate=16000"}
    assert sent.audio_seconds == pytest.approx(0.6, abs=0.01)
    assert spectrum_peak(bytes(sent.audio[3200:]), 16000)[0] == pytest.approx(1000, abs=10)
    assert len(played) == 50
    assert {len(f) for f in played} == {FRAME_BYTES}
    assert spectrum_peak(b"".join(played)[800:], 8000)[0] == pytest.approx(1000, abs=5)

    assert [(t.speaker, t.text, t.ts) for t in record.turns] == [
        ("Caller", "Hello, is this the hotel?", T0),
        ("AI", "Yes, this is Hotel Linden.", T0),
    ]
    assert (record.input_turns, record.output_turns) == (1, 1)
    assert (record.tokens_prompt, record.tokens_total) == (120, 180)
    assert (record.outcome, record.error_detail) == ("far-hangup", "")
    ours = [r.getMessage() for r in caplog.records if not r.name.startswith("websockets.server")]
    assert any("x-goog-api-key" in line for line in ours)  # the handshake was logged...
    assert not [line for line in ours if KEY in line]  # ...without the key
    assert sent.closed_by_client


async def test_barge_in_drops_the_queued_audio_at_once(harness: Harness) -> None:
    endpoint = LiveEndpoint(KEY, [script(
        AwaitAudio(0.1), Send(audio(tone(500, 24000, 3.0))), Send(said("AI", "Let me tell you")),
        AwaitAudio(0.5), Send(INTERRUPTED), Send(said("Caller", "Wait, stop.")),
    )])  # fmt: skip
    async with started(harness, endpoint) as session:
        fed = feed(session, 5)
        await eventually(lambda: len(session._out) >= 150, "three seconds of model audio")
        first = [session.next_frame() for _ in range(10)]
        feed(session, 25, fed)  # the caller speaks over the model
        await eventually(lambda: session.next_frame() is None, "the queue to be dropped")
        record = await session.finish("far-hangup")

    assert all(frame is not None for frame in first)
    assert [(t.speaker, t.text) for t in record.turns] == [
        ("AI", "Let me tell you"), ("Caller", "Wait, stop."),
    ]  # fmt: skip


@pytest.mark.parametrize("outcome", ["voicemail", "not-now", "finished"])
async def test_end_call_ends_the_call_with_the_models_outcome(
    harness: Harness, outcome: str
) -> None:
    endpoint = LiveEndpoint(KEY, [script(
        AwaitAudio(0.1), Send(tool_call("end_call", outcome=outcome)), AwaitToolResponse(),
    )])  # fmt: skip
    async with started(harness, endpoint) as session:
        feed(session, 10)
        signal = await asyncio.wait_for(session.signal(), WAIT_SEC)
        await eventually(lambda: bool(endpoint.connections[0].tool_responses), "the answer")
        record = await session.finish("engine")

    assert signal == EndCall(outcome)  # type: ignore[arg-type]
    assert record.outcome == outcome
    answer = endpoint.connections[0].tool_responses[0]["functionResponses"][0]
    assert (answer["id"], answer["name"]) == ("fc-end_call", "end_call")


@pytest.mark.parametrize(("target", "kind"), [("+4930123456", "phone"), ("anna", "user")])
async def test_transfer_call_asks_the_bridge_to_hand_the_caller_over(
    harness: Harness, target: str, kind: str
) -> None:
    endpoint = LiveEndpoint(KEY, [script(
        AwaitAudio(0.1), Send(tool_call("transfer_call", target=target)), AwaitToolResponse(),
    )])  # fmt: skip
    async with started(harness, endpoint) as session:
        feed(session, 10)
        signal = await asyncio.wait_for(session.signal(), WAIT_SEC)
        record = await session.finish("transferred")

    assert signal == TransferCall(target, kind)  # type: ignore[arg-type]
    assert record.outcome == "transferred"


async def test_go_away_resumes_the_session_with_the_latest_handle(harness: Harness) -> None:
    endpoint = LiveEndpoint(KEY, [
        script(
            Send({"sessionResumptionUpdate": {"newHandle": "handle-1", "resumable": True}}),
            Send({"sessionResumptionUpdate": {"newHandle": "handle-2", "resumable": True}}),
            AwaitAudio(0.1), Send({"goAway": {"timeLeft": "5s"}}),
        ),
        script(
            AwaitAudio(0.1), Send(audio(tone(1000, 24000, 0.2))), Send(said("AI", "Still here.")),
            Send(TURN_COMPLETE),
        ),
    ])  # fmt: skip
    async with started(harness, endpoint) as session:
        fed = feed(session, 10)
        await eventually(lambda: len(endpoint.connections) == 2, "a second connection")
        feed(session, 10, fed)  # audio fed while reconnecting reaches the new connection
        await eventually(lambda: len(session._out) >= 10, "audio after resumption")
        record = await session.finish("cancelled")

    assert "handle" not in endpoint.connections[0].setup.get("sessionResumption", {})
    assert endpoint.connections[1].setup["sessionResumption"] == {"handle": "handle-2"}
    assert endpoint.connections[1].audio_seconds >= 0.1
    assert [(t.speaker, t.text) for t in record.turns] == [("AI", "Still here.")]
    assert (record.outcome, record.error_detail) == ("cancelled", "")


async def test_a_failed_resumption_is_a_technical_failure_naming_the_cause(
    harness: Harness,
) -> None:
    endpoint = LiveEndpoint(KEY, [script(
        AwaitAudio(0.1), Send({"sessionResumptionUpdate": {"newHandle": "h", "resumable": True}}),
        Send({"goAway": {"timeLeft": "1s"}}),
    )])  # fmt: skip
    async with started(harness, endpoint) as session:
        endpoint.api_key = "the key was revoked meanwhile"
        feed(session, 10)
        with pytest.raises(EngineError) as failure:
            await asyncio.wait_for(session.signal(), WAIT_SEC)
        record = await session.finish("engine")

    assert record.outcome == ""
    assert record.error_detail == str(failure.value)
    assert "resumption failed" in record.error_detail
    assert BAD_KEY_REASON in record.error_detail
    assert KEY not in record.error_detail
    assert "\n" not in record.error_detail


async def test_a_bad_key_fails_at_start_in_one_line_without_the_key(harness: Harness) -> None:
    wrong = "AIzaWRONG-key-that-must-not-leak"
    endpoint = LiveEndpoint(KEY, [script()])
    async with running(endpoint, harness.cert, harness.key):
        session = harness.engine(endpoint).session(conversation(wrong))
        with pytest.raises(EngineError) as failure:
            await session.start()
        await session.finish("engine")

    message = str(failure.value)
    assert BAD_KEY_REASON in message
    assert "1007" in message
    assert wrong not in message
    assert "\n" not in message
    assert endpoint.connections[0].setup == {}


async def test_max_duration_asks_for_a_goodbye_and_queues_it(harness: Harness) -> None:
    endpoint = LiveEndpoint(KEY, [script(
        AwaitClientContent(), Send(audio(tone(1000, 24000, 1.0))),
        Send(said("AI", "Our time is up, goodbye!")), Send(TURN_COMPLETE),
    )])  # fmt: skip
    async with started(harness, endpoint) as session:
        record = await session.finish("max-duration")
        closing = drain(session)

    assert record.outcome == "max-duration"
    assert record.turns[-1].text == "Our time is up, goodbye!"
    asked = endpoint.connections[0].client_content[0]
    assert asked["turns"][0]["parts"][0]["text"] == CLOSING_REQUEST
    assert len(closing) == 50
    assert np.frombuffer(b"".join(closing), dtype="<i2").std() > 1000


async def test_an_unknown_model_fails_at_start_naming_the_model(harness: Harness) -> None:
    endpoint = LiveEndpoint(KEY, [script()])
    async with running(endpoint, harness.cert, harness.key):
        session = harness.engine(endpoint).session(conversation(model="gemini-nonexistent"))
        with pytest.raises(EngineError) as failure:
            await session.start()
        record = await session.finish("engine")

    message = str(failure.value)
    assert message.startswith("Gemini Live connect failed: 1008 models/gemini-nonexistent is not")
    assert "\n" not in message
    assert KEY not in message
    assert (record.outcome, record.error_detail) == ("", message)


async def test_the_environment_points_the_engine_at_another_endpoint(
    harness: Harness, tmp_path: Path
) -> None:
    endpoint = LiveEndpoint(
        KEY, [script(Send(said("AI", "Hello from elsewhere.")), Send(TURN_COMPLETE))]
    )
    async with running(endpoint, harness.cert, harness.key):
        environ = {
            "SWITCHBOARD_GEMINI_BASE_URL": endpoint.base_url,
            "SWITCHBOARD_GEMINI_CA_FILE": str(harness.cert),
        }
        engine = create_engine("gemini", environ)
        assert engine.name == "gemini"
        session = engine.session(conversation())
        assert isinstance(session, GeminiSession)
        await session.start()
        await eventually(lambda: session.record.output_turns == 1, "the model's turn")
        record = await session.finish("cancelled")
        # Without the CA file the self-signed endpoint is not trusted.
        untrusted = create_engine("gemini", {"SWITCHBOARD_GEMINI_BASE_URL": endpoint.base_url})
        refused = untrusted.session(conversation())
        with pytest.raises(EngineError, match="CERTIFICATE_VERIFY_FAILED"):
            await refused.start()
        await refused.finish("engine")

    assert [t.text for t in record.turns] == ["Hello from elsewhere."]
    bad = tmp_path / "missing.pem"
    with pytest.raises(ValueError, match="SWITCHBOARD_GEMINI_CA_FILE"):
        create_engine("gemini", {"SWITCHBOARD_GEMINI_CA_FILE": str(bad)})
    assert create_engine("offline", {}).name == "offline"
    with pytest.raises(ValueError, match="unknown engine 'espeak'"):
        create_engine("espeak", {})
