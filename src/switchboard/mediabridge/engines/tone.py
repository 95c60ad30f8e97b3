"""The line-check engine (``--engine tone``): no speech, no key, no network.

It plays a 440 Hz tone for ``seconds`` once the call is answered, then listens, and ends the
conversation as ``finished`` once the far end has been quiet for ``quiet_seconds``. What it
hears is recorded honestly as a caller turn with its length only. It proves the SIP path and
both RTP directions of a trunk before any AI is involved: on a phone, you hear the tone, say
something, and the call ends when you stop.
"""

from __future__ import annotations

import asyncio
import math
import struct
from datetime import UTC, datetime

from switchboard.mediabridge.engines.base import (
    FRAME_MS,
    FRAME_SAMPLES,
    SAMPLE_RATE,
    Conversation,
    EndCall,
    FinishReason,
    Record,
    Signal,
    TurnRecord,
)

DEFAULT_SECONDS = 2.0
DEFAULT_QUIET_SECONDS = 2.0
LEVEL = 8000
HEARD_LEVEL = 200  # mean absolute sample value above which a frame counts as sound


def _tone_frames(hz: float) -> list[bytes]:
    """One second of the tone as 20 ms frames (a whole number of cycles at 440 Hz)."""
    frames = []
    for index in range(1000 // FRAME_MS):
        start = index * FRAME_SAMPLES
        samples = (
            round(LEVEL * math.sin(2 * math.pi * hz * (start + n) / SAMPLE_RATE))
            for n in range(FRAME_SAMPLES)
        )
        frames.append(struct.pack(f"<{FRAME_SAMPLES}h", *samples))
    return frames


class ToneEngine:
    name = "tone"

    def __init__(
        self,
        seconds: float = DEFAULT_SECONDS,
        quiet_seconds: float = DEFAULT_QUIET_SECONDS,
        hz: float = 440.0,
    ) -> None:
        self.frames_to_play = round(seconds * 1000 / FRAME_MS)
        self.quiet_frames = round(quiet_seconds * 1000 / FRAME_MS)
        self.tone = _tone_frames(hz)

    def session(self, conversation: Conversation) -> ToneSession:
        return ToneSession(self, conversation)


class ToneSession:
    def __init__(self, engine: ToneEngine, conversation: Conversation) -> None:
        self.engine = engine
        self.conversation = conversation
        self.played = 0
        self.heard = 0
        self.quiet = 0  # 20 ms ticks since the far end last made a sound
        self.started_at = datetime.now(UTC)
        self._done = asyncio.Event()

    async def start(self) -> None:
        self.started_at = datetime.now(UTC)

    def feed(self, frame: bytes) -> None:
        samples = struct.unpack(f"<{len(frame) // 2}h", frame)
        if samples and sum(abs(s) for s in samples) / len(samples) > HEARD_LEVEL:
            self.heard += 1
            self.quiet = 0

    def next_frame(self) -> bytes | None:
        self.quiet += 1
        if self.played >= self.engine.frames_to_play:
            if self.quiet >= self.engine.quiet_frames:
                self._done.set()
            return None
        frame = self.engine.tone[self.played % len(self.engine.tone)]
        self.played += 1
        return frame

    async def signal(self) -> Signal:
        await self._done.wait()
        return EndCall(outcome="finished")

    def transfer_failed(self, detail: str) -> None:
        """Never asks for a transfer: nothing to take back."""

    async def finish(self, reason: FinishReason) -> Record:
        turns = [TurnRecord(speaker="AI", text="[line check tone]", ts=self.started_at)]
        if self.heard:
            seconds = self.heard * FRAME_MS / 1000
            turns.append(TurnRecord(speaker="Caller", text=f"[caller audio {seconds:.1f} s]",
                                    ts=self.started_at))  # fmt: skip
        outcome = "finished" if reason == "engine" else ""
        return Record(
            outcome=outcome, turns=turns, input_turns=1 if self.heard else 0, output_turns=1
        )
