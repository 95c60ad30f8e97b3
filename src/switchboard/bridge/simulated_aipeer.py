"""The simulated bridge's AI peer of a browser call to a virtual number (``ai-peer``).

A real aiortc peer, as on the media bridge: it joins the room over the platform's signaling
WebSocket (role ``ai-vnum``, the request's ``joinToken``), offers a mesh connection to the peers
already there and answers offers (``switchboard.webrtc.mesh``). Its voice is a quiet 440 Hz tone;
what the browser sends is received and dropped. The conversation itself is the simulator's
scripted inbound call, which waits at ``ai-started`` until the browser's connection is up.
"""

from __future__ import annotations

import contextlib

import numpy as np
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
from av import AudioFrame

from switchboard.bridge.protocol import AiPeerRequest
from switchboard.webrtc.mesh import MeshPeer
from switchboard.webrtc.tracks import PacedTrack, pcm_frame

SAMPLE_RATE = 48_000
FRAME_SAMPLES = 960  # 20 ms
TONE_HZ = 440.0
TONE_LEVEL = 0.05  # of full scale: audible, not loud
# How long the AI peer waits for the browser's connection before it ends the call (empty-room).
CONNECT_TIMEOUT_SEC = 30.0


class ToneTrack(PacedTrack):
    """A quiet sine, one 20 ms frame per ``recv``."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__(rate=SAMPLE_RATE, step=FRAME_SAMPLES)

    def make(self, pts: int) -> AudioFrame:
        n = np.arange(pts, pts + FRAME_SAMPLES)
        wave = TONE_LEVEL * 32767 * np.sin(2 * np.pi * TONE_HZ * n / SAMPLE_RATE)
        return pcm_frame(wave.astype("<i2").tobytes(), sample_rate=SAMPLE_RATE)


async def drain(track: MediaStreamTrack) -> None:
    """Receive the browser's audio and drop it (aiortc queues what nobody reads)."""
    with contextlib.suppress(MediaStreamError):
        while True:
            await track.recv()


class SimulatedAiPeer:
    """The peer of one call: ``async with peer.mesh`` keeps it in the room; ``connect`` is
    what the script's ``ai-started`` waits on."""

    def __init__(self, request: AiPeerRequest) -> None:
        self.track = ToneTrack()
        self.mesh = MeshPeer(
            request.signal_url, name=request.name or "AI", role="ai-vnum",
            token=request.join_token, track=self.track, listen=drain,
        )  # fmt: skip

    async def connect(self) -> bool:
        """True once the browser's connection is up; False when it left first or never
        connected within ``CONNECT_TIMEOUT_SEC``."""
        return await self.mesh.wait_connected(CONNECT_TIMEOUT_SEC)
