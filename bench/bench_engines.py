"""CPU per call of the media bridge's engine side: what one 20 ms tick of a call costs.

Per engine path, the CPU time of one tick (one caller frame in, one frame out), measured over many
ticks of one session and given as µs per tick and as the share of one core that 200 concurrent
calls (the bridge's goal per core) would take for it:

- offline engine, listening: the VAD on a caller frame of noise, nothing to send;
- offline engine, speaking: a frame of queued espeak-ng speech out, the caller frame skipped;
- Gemini Live audio path without the network: the 8 → 16 kHz resampler on a caller frame and the
  24 → 8 kHz resampler on 20 ms of model audio (the SDK's own JSON and base64 work comes on top).

    .venv/bin/python bench/bench_engines.py [--ticks N]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

import numpy as np

from switchboard.mediabridge.engines.base import FRAME_BYTES, Conversation
from switchboard.mediabridge.engines.offline import OfflineEngine, OfflineSession
from switchboard.mediabridge.engines.resample import StreamResampler

CALLS_PER_CORE = 200
TICKS_PER_SECOND = 50


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
        call_id="bench", direction="outbound", model="offline", voice="Kore", language="en-US",
        max_seconds=3600, system_prompt="You are the benchmark. Speak.", api_key="",
    )  # fmt: skip
    session = OfflineEngine(silence_timeout_sec=silence_timeout_sec).session(conversation)
    await session.start()
    return session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=20000)
    ticks = parser.parse_args().ticks
    frames = noise_frames(1000)

    speaking = asyncio.run(offline_session(1e6))

    def speak(i: int) -> None:
        speaking.next_frame()
        speaking.feed(frames[i % 1000])

    spoken = min(ticks, 200)  # the opening and first prompt: a few hundred frames
    rows = [("offline, speaking", per_tick(speak, spoken))]

    listening = asyncio.run(offline_session(1e6))
    while listening.next_frame() is not None:
        listening.feed(frames[0])
    for _ in range(30):  # past the echo guard
        listening.feed(frames[0])

    def listen(i: int) -> None:
        listening.next_frame()
        listening.feed(frames[i % 1000])

    rows.append(("offline, listening", per_tick(listen, ticks)))

    up, down = StreamResampler(8000, 16000), StreamResampler(24000, 8000)
    model_audio = np.random.default_rng(4).normal(0, 3000, 480).astype("<i2").tobytes()

    def resample(i: int) -> None:
        up(frames[i % 1000])
        down(model_audio)

    rows.append(("Gemini audio path (resampling)", per_tick(resample, ticks)))
    assert len(frames[0]) == FRAME_BYTES
    print(f"| path | µs per tick | share of a core at {CALLS_PER_CORE} calls |")
    print("|---|---:|---:|")
    for name, seconds in rows:
        share = seconds * TICKS_PER_SECOND * CALLS_PER_CORE
        print(f"| {name} | {seconds * 1e6:.1f} | {share:.1%} |")


if __name__ == "__main__":
    main()
