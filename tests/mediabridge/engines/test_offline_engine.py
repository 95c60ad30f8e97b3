"""The offline engine, fed real espeak-ng speech and noise frame by frame (20 ms a frame, no
sleeping): its turns, their timings, its outcomes and the audio it sends."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from switchboard.mediabridge.engines.base import (
    CLOSING_LINE_MAX_SEC,
    FRAME_BYTES,
    Conversation,
    EndCall,
    EngineError,
    Record,
)
from switchboard.mediabridge.engines.offline import (
    DEFAULT_SILENCE_TIMEOUT_SEC,
    ECHO_GUARD_FRAMES,
    SCRIPTS,
    OfflineEngine,
    OfflineSession,
    opening_line,
)
from switchboard.mediabridge.engines.speech import synthesize

pytestmark = pytest.mark.slow

T0 = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
PROMPT = "You are the front desk of Hotel Linden. Be brief and friendly.\nNever give prices."
UTTERANCE_A = "Hello, I would like to book a table for two people tomorrow evening."
UTTERANCE_B = "Yes, that works for me. Thank you very much."
NOISE_RMS = 300.0  # about 20 dB below espeak-ng's speech level
FRAME_SEC = 0.02


def rms(frame: bytes) -> float:
    samples = np.frombuffer(frame, dtype="<i2").astype(np.float64)
    return float(np.sqrt((samples**2).mean()))


class Line:
    """The caller's line: white noise, with speech mixed in when the caller talks."""

    def __init__(self, seed: int = 7) -> None:
        self._rng = np.random.default_rng(seed)

    def frame(self, speech: bytes | None = None) -> bytes:
        noise = self._rng.normal(0.0, NOISE_RMS, 160)
        if speech is not None:
            noise += np.frombuffer(speech, dtype="<i2")
        return np.clip(noise, -32768, 32767).astype("<i2").tobytes()


@dataclass
class Call:
    """Drives a session as the bridge's media loop does: per 20 ms, one frame out, one in."""

    session: OfflineSession
    line: Line = field(default_factory=Line)
    sent: list[bytes | None] = field(default_factory=list)
    fed: int = 0

    def tick(self, speech: bytes | None = None) -> bytes | None:
        out = self.session.next_frame()
        self.sent.append(out)
        self.session.feed(self.line.frame(speech))
        self.fed += 1
        return out

    def until_quiet(self, quiet_frames: int = 25, limit: int = 3000) -> None:
        """Run until the engine has spoken, then said nothing for ``quiet_frames`` frames."""
        quiet, spoke = 0, False
        for _ in range(limit):
            out = self.tick()
            spoke = spoke or out is not None
            quiet = quiet + 1 if out is None else 0
            if spoke and quiet >= quiet_frames:
                return
        raise AssertionError("the engine never spoke, or never went quiet")

    def say(self, frames: list[bytes]) -> int:
        """The caller speaks; returns the frame index at which the speech began."""
        begin = self.fed
        for frame in frames:
            self.tick(frame)
        return begin

    def run(self, frames: int) -> None:
        for _ in range(frames):
            self.tick()


@pytest.fixture(scope="module")
def caller_speech() -> dict[str, list[bytes]]:
    """The caller's two utterances, spoken by espeak-ng in another voice than the engine's."""

    async def make() -> dict[str, list[bytes]]:
        a, b = await asyncio.gather(
            synthesize(UTTERANCE_A, "en-gb+m1"), synthesize(UTTERANCE_B, "en-gb+m1")
        )
        return {"a": a, "b": b}

    return asyncio.run(make())


def conversation(language: str = "en-US", voice: str = "Kore") -> Conversation:
    return Conversation(
        call_id="oac-0123456789ab", direction="outbound", model="offline", voice=voice,
        language=language, max_seconds=600, system_prompt=PROMPT, api_key="",
    )  # fmt: skip


def engine(silence_timeout_sec: float = DEFAULT_SILENCE_TIMEOUT_SEC) -> OfflineEngine:
    return OfflineEngine(now=lambda: T0, silence_timeout_sec=silence_timeout_sec)


async def started(eng: OfflineEngine, conv: Conversation | None = None) -> Call:
    session = eng.session(conv or conversation())
    await session.start()
    return Call(session)


def at(frame: int) -> datetime:
    return T0 + timedelta(seconds=frame * FRAME_SEC)


def speech_seconds(frames: list[bytes]) -> float:
    """How long the utterance really is: first to last frame louder than the noise."""
    loud = [i for i, f in enumerate(frames) if rms(f) > 2 * NOISE_RMS]
    return (loud[-1] - loud[0] + 1) * FRAME_SEC


async def test_a_conversation_speaks_the_script_hears_two_turns_and_ends_finished(
    caller_speech: dict[str, list[bytes]],
) -> None:
    call = await started(engine())
    signal = asyncio.ensure_future(call.session.signal())

    call.until_quiet()
    began_a = call.say(caller_speech["a"])
    call.until_quiet()
    began_b = call.say(caller_speech["b"])
    call.until_quiet()
    await asyncio.sleep(0)
    assert signal.done()
    assert signal.result() == EndCall("finished")
    record = await call.session.finish("engine")

    en = SCRIPTS["en"]
    assert [(t.speaker, t.text) for t in record.turns] == [
        ("AI", "You are the front desk of Hotel Linden."),
        ("AI", en.prompts[0]),
        ("Caller", record.turns[2].text),
        ("AI", en.prompts[1]),
        ("Caller", record.turns[4].text),
        ("AI", en.goodbye),
    ]
    assert record.outcome == "finished"
    assert (record.input_turns, record.output_turns) == (2, 4)
    assert (record.tokens_prompt, record.tokens_total) == (0, 0)
    for turn, frames, began in ((record.turns[2], caller_speech["a"], began_a),
                                (record.turns[4], caller_speech["b"], began_b)):  # fmt: skip
        said = float(turn.text.removeprefix("[caller spoke ").removesuffix(" s]"))
        assert said == pytest.approx(speech_seconds(frames), abs=0.25)
        assert abs(turn.ts - at(began)) <= timedelta(milliseconds=200)
    # The AI answers each caller turn after the end-of-turn pause, not before the caller ends.
    assert record.turns[3].ts > record.turns[2].ts + timedelta(seconds=3)


async def test_the_audio_out_is_whole_frames_of_speech_at_8_khz() -> None:
    call = await started(engine())
    call.until_quiet()
    spoken = [f for f in call.sent if f is not None]

    assert all(len(f) == FRAME_BYTES for f in spoken)
    # The opening and the first prompt: several seconds at 8 kHz, most of it audible.
    assert 4.0 < len(spoken) * FRAME_SEC < 15.0
    loud = sum(rms(f) > 500 for f in spoken)
    assert loud / len(spoken) > 0.6
    # Nothing is sent once the lines are said: the caller's turn is awaited in silence.
    assert call.sent[-1] is None


async def test_a_silent_caller_hears_goodbye_after_the_timeout_and_the_call_ends() -> None:
    call = await started(engine(silence_timeout_sec=3.0))
    call.until_quiet(quiet_frames=1)
    prompt_over = call.fed - 1
    call.until_quiet(quiet_frames=400)
    await asyncio.sleep(0)
    record = await call.session.finish("engine")

    assert [t.speaker for t in record.turns] == ["AI", "AI", "AI"]
    assert record.turns[-1].text == SCRIPTS["en"].goodbye
    waited = record.turns[-1].ts - at(prompt_over)
    expected = timedelta(seconds=3.0 + ECHO_GUARD_FRAMES * FRAME_SEC)
    assert abs(waited - expected) <= timedelta(milliseconds=60)
    assert record.outcome == "finished"
    assert record.input_turns == 0


async def test_the_echo_of_its_own_voice_is_not_a_caller_turn() -> None:
    call = await started(engine(silence_timeout_sec=2.0))
    signal = asyncio.ensure_future(call.session.signal())
    echo: list[bytes | None] = [None] * 4  # 80 ms round trip
    for _ in range(2000):
        echo.append(call.session.next_frame())
        call.session.feed(call.line.frame(echo.pop(0)))
        await asyncio.sleep(0)
        if signal.done():
            break
    assert signal.done()
    record = await call.session.finish("engine")

    assert record.input_turns == 0
    assert [t.speaker for t in record.turns] == ["AI", "AI", "AI"]


async def test_max_duration_says_the_closing_line_within_the_limit(
    caller_speech: dict[str, list[bytes]],
) -> None:
    call = await started(engine())
    call.until_quiet()
    call.say(caller_speech["a"][:60])
    record = await call.session.finish("max-duration")

    assert record.outcome == "max-duration"
    assert record.turns[-1].speaker == "AI"
    assert record.turns[-1].text == SCRIPTS["en"].closing
    # The caller's unfinished turn is kept, as long as it was heard.
    assert record.turns[-2].speaker == "Caller"
    closing = []
    while (frame := call.session.next_frame()) is not None:
        closing.append(frame)
    assert 1.0 < len(closing) * FRAME_SEC <= CLOSING_LINE_MAX_SEC
    assert sum(rms(f) > 500 for f in closing) > len(closing) // 2


@pytest.mark.parametrize("reason", ["far-hangup", "cancelled", "transferred"])
async def test_an_ending_from_outside_stops_the_audio_and_names_the_reason(
    reason: str, caller_speech: dict[str, list[bytes]]
) -> None:
    call = await started(engine())
    call.run(30)  # mid-opening
    record: Record = await call.session.finish(reason)  # type: ignore[arg-type]

    assert record.outcome == reason
    assert call.session.next_frame() is None
    assert [t.speaker for t in record.turns] == ["AI"]
    assert await call.session.finish("engine") is record  # finishing twice changes nothing


async def test_a_german_call_speaks_the_german_script_with_a_german_voice() -> None:
    call = await started(engine(), conversation(language="de-DE", voice="Charon"))
    call.until_quiet()
    record = await call.session.finish("cancelled")

    assert record.turns[1].text == SCRIPTS["de"].prompts[0]
    assert call.session.espeak_voice == "de+m3"


async def test_a_missing_espeak_is_an_engine_error_in_one_line() -> None:
    eng = OfflineEngine(espeak="/nonexistent/espeak-ng", now=lambda: T0)
    session = eng.session(conversation())
    with pytest.raises(EngineError) as info:
        await session.start()
    assert "\n" not in str(info.value)
    assert "espeak-ng" in str(info.value)
    record = await session.finish("engine")
    assert (record.outcome, record.error_detail) == ("", str(info.value))


async def test_a_frame_of_the_wrong_size_is_refused() -> None:
    call = await started(engine())
    with pytest.raises(ValueError, match="320 bytes"):
        call.session.feed(b"\0" * 160)


@pytest.mark.parametrize(
    ("prompt", "line"),
    [
        (PROMPT, "You are the front desk of Hotel Linden."),
        ("Greet the caller!  Then ask why they call.", "Greet the caller!"),
        ("no full stop at all", "no full stop at all"),
        ("   ", ""),
        ("word " * 100, ("word " * 48).strip()),
    ],
)
def test_the_opening_line_is_the_prompts_first_sentence(prompt: str, line: str) -> None:
    assert opening_line(prompt) == line
