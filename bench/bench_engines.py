"""CPU per call of the media bridge's engine side: what one 20 ms tick of a call costs.

Per engine path, the CPU time of one tick (one caller frame in, one frame out), measured over many
ticks of one session and given as µs per tick and as the share of one core that 200 concurrent
calls (the bridge's goal per core) would take for it:

- offline engine, listening: the VAD on a caller frame of noise, nothing to send;
- offline engine, speaking: a frame of queued espeak-ng speech out, the caller frame skipped;
- Gemini Live audio path without the network: the 8 → 16 kHz resampler on a caller frame and the
  24 → 8 kHz resampler on 20 ms of model audio (the SDK's own JSON and base64 work comes on top).

Checked before any figure is printed: the speaking session sent a frame on every tick, and the
frames it sent and still has to send are the espeak-ng speech of its opening and first prompt; the
listening session heard no caller turn in the noise and had nothing to send, then hears one turn
of a caller who speaks and falls silent, and answers it; the resamplers give 20 ms at their output
rate for 20 ms in, and a 1 kHz tone through them comes out as that tone, within 1% in amplitude
and residual.

    .venv/bin/python bench/bench_engines.py [--ticks N]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

import numpy as np

from report import check
from switchboard.mediabridge.engines.base import FRAME_BYTES, Conversation
from switchboard.mediabridge.engines.offline import (
    OfflineEngine,
    OfflineSession,
    opening_line,
    script_for,
)
from switchboard.mediabridge.engines.resample import StreamResampler
from switchboard.mediabridge.engines.speech import TurnDetector, synthesize

CALLS_PER_CORE = 200
TICKS_PER_SECOND = 50
SYSTEM_PROMPT = "You are the benchmark. Speak."
LANGUAGE = "en-US"
TONE_HZ = 1000
TONE_AMPLITUDE = 10000


def noise_frames(count: int) -> list[bytes]:
    rng = np.random.default_rng(3)
    return [rng.normal(0, 300, 160).astype("<i2").tobytes() for _ in range(count)]


def per_tick(tick: Callable[[int], object], ticks: int) -> float:
    """CPU seconds of this process per tick (not wall time: other processes do not count)."""
    start = time.process_time()
    for i in range(ticks):
        tick(i)
    return (time.process_time() - start) / ticks


async def offline_session(silence_timeout_sec: float) -> OfflineSession:
    conversation = Conversation(
        call_id="bench", direction="outbound", model="offline", voice="Kore", language=LANGUAGE,
        max_seconds=3600, system_prompt=SYSTEM_PROMPT, api_key="",
    )  # fmt: skip
    session = OfflineEngine(silence_timeout_sec=silence_timeout_sec).session(conversation)
    await session.start()
    return session


async def script_speech(voice: str) -> list[bytes]:
    """The frames a new offline session says before it first listens: opening, first prompt."""
    lines = (opening_line(SYSTEM_PROMPT), script_for(LANGUAGE).prompts[0])
    spoken = await asyncio.gather(*(synthesize(line, voice) for line in lines))
    return [frame for frames in spoken for frame in frames]


def drain(session: OfflineSession) -> list[bytes]:
    """Every frame the session has queued to send."""
    out = []
    while (frame := session.next_frame()) is not None:
        out.append(frame)
    return out


def check_speaking(session: OfflineSession, ticks: int, script: list[bytes]) -> None:
    """Every timed tick sent the next frame of the script's speech, and no caller was heard."""
    check(len(script) > ticks, f"{ticks} speaking ticks, but only {len(script)} frames to say")
    check(
        all(len(frame) == FRAME_BYTES for frame in script),
        f"espeak-ng frames are not all {FRAME_BYTES} bytes",
    )
    check(session.frames_fed == ticks, f"speaking: {session.frames_fed} frames fed, not {ticks}")
    rest = drain(session)
    check(
        rest == script[ticks:],
        f"speaking: after {ticks} ticks {len(rest)} frames left to send, not the script's last "
        f"{len(script) - ticks}",
    )
    check(session.record.input_turns == 0, "speaking: heard a caller turn in its own echo")


def check_listening(session: OfflineSession, speech: list[bytes]) -> None:
    """The timed ticks heard nothing and sent nothing; the session still hears a caller who
    speaks and then falls silent."""
    check(session.record.input_turns == 0, "listening: heard a caller turn in the noise")
    check(session.next_frame() is None, "listening: had a frame to send")
    for frame in [*speech, *[bytes(FRAME_BYTES)] * (TurnDetector.END_SILENCE_FRAMES + 5)]:
        session.feed(frame)
    heard = session.record.input_turns
    check(heard == 1, f"listening: {heard} caller turns for a caller who spoke once")
    reply = drain(session)
    check(bool(reply), "listening: said nothing after the caller's turn")


def check_resampler(resampler: StreamResampler, rate_in: int, rate_out: int) -> None:
    """20 ms in gives 20 ms out, and a tone comes out as the same tone at the new rate."""
    chunk, chunks = rate_in // TICKS_PER_SECOND, 10
    t = np.arange(chunk * chunks) / rate_in
    tone = np.rint(TONE_AMPLITUDE * np.sin(2 * np.pi * TONE_HZ * t)).astype("<i2")
    outs = [resampler(tone[i * chunk : (i + 1) * chunk].tobytes()) for i in range(chunks)]
    want = 2 * rate_out // TICKS_PER_SECOND
    check(
        all(len(out) == want for out in outs),
        f"{rate_in} -> {rate_out} Hz: {[len(out) for out in outs]} bytes per 20 ms, not {want}",
    )
    settled = np.frombuffer(b"".join(outs[2:]), "<i2").astype(np.float64)
    t = np.arange(len(settled)) / rate_out
    basis = np.stack([np.sin(2 * np.pi * TONE_HZ * t), np.cos(2 * np.pi * TONE_HZ * t)], axis=1)
    fit = np.linalg.lstsq(basis, settled, rcond=None)[0]
    amplitude = float(np.hypot(fit[0], fit[1]))
    residual = float(np.sqrt(((settled - basis @ fit) ** 2).mean()))
    check(
        abs(amplitude - TONE_AMPLITUDE) < TONE_AMPLITUDE / 100 and residual < TONE_AMPLITUDE / 100,
        f"{rate_in} -> {rate_out} Hz: a {TONE_HZ} Hz tone of amplitude {TONE_AMPLITUDE} came out "
        f"with amplitude {amplitude:.0f} and residual {residual:.0f}",
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=20000)
    ticks = parser.parse_args().ticks
    frames = noise_frames(1000)
    check(all(len(frame) == FRAME_BYTES for frame in frames), "noise frames of the wrong size")

    speaking = asyncio.run(offline_session(1e6))
    script = asyncio.run(script_speech(speaking.espeak_voice))

    def speak(i: int) -> None:
        speaking.next_frame()
        speaking.feed(frames[i % 1000])

    spoken = min(ticks, 200)  # the opening and first prompt: a few hundred frames
    rows = [("offline, speaking", per_tick(speak, spoken))]
    check_speaking(speaking, spoken, script)

    listening = asyncio.run(offline_session(1e6))
    while listening.next_frame() is not None:
        listening.feed(frames[0])
    for _ in range(30):  # past the echo guard
        listening.feed(frames[0])

    def listen(i: int) -> None:
        listening.next_frame()
        listening.feed(frames[i % 1000])

    rows.append(("offline, listening", per_tick(listen, ticks)))
    check_listening(listening, script)

    up, down = StreamResampler(8000, 16000), StreamResampler(24000, 8000)
    model_audio = np.random.default_rng(4).normal(0, 3000, 480).astype("<i2").tobytes()

    def resample(i: int) -> None:
        up(frames[i % 1000])
        down(model_audio)

    rows.append(("Gemini audio path (resampling)", per_tick(resample, ticks)))
    check_resampler(up, 8000, 16000)
    check_resampler(down, 24000, 8000)
    print(f"| path | µs per tick | share of a core at {CALLS_PER_CORE} calls |")
    print("|---|---:|---:|")
    for name, seconds in rows:
        share = seconds * TICKS_PER_SECOND * CALLS_PER_CORE
        print(f"| {name} | {seconds * 1e6:.1f} | {share:.1%} |")


if __name__ == "__main__":
    main()
