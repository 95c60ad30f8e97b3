"""Synthetic media tracks for aiortc: one frame per ``recv``, paced in real time."""

from __future__ import annotations

import asyncio
import fractions
import time

from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
from av import AudioFrame, VideoFrame


class PacedTrack(MediaStreamTrack):
    """Frames ``step`` ticks of a ``rate`` Hz clock apart, sent at that pace; a subclass makes
    each frame (``make``, given its timestamp in ticks)."""

    def __init__(self, *, rate: int, step: int) -> None:
        super().__init__()
        self.rate = rate
        self.step = step
        self._start = 0.0
        self._pts = -1

    async def recv(self) -> AudioFrame | VideoFrame:
        if self.readyState != "live":
            raise MediaStreamError
        if self._pts < 0:
            self._start, self._pts = time.time(), 0
        else:
            self._pts += self.step
            await asyncio.sleep(self._start + self._pts / self.rate - time.time())
        frame = self.make(self._pts)
        frame.pts, frame.time_base = self._pts, fractions.Fraction(1, self.rate)
        return frame

    def make(self, pts: int) -> AudioFrame | VideoFrame:
        raise NotImplementedError


def pcm_frame(pcm: bytes, *, sample_rate: int) -> AudioFrame:
    """Mono 16-bit PCM as an audio frame."""
    frame = AudioFrame(format="s16", layout="mono", samples=len(pcm) // 2)
    frame.planes[0].update(pcm)
    frame.sample_rate = sample_rate
    return frame
