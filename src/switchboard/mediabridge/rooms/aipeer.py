"""The AI peer of a browser call to a virtual number (``POST /v1/rooms/ai-peer``).

An aiortc peer joins the room over the platform's signaling WebSocket (role ``ai-vnum``, the
call's ``joinToken``), offers a mesh connection to every peer already there (the newcomer
offers; an offer it receives is answered), and lets the call's engine talk: the browser's audio
(Opus, decoded by aiortc) is taken to 8 kHz mono PCM with the streaming resampler and fed to the
engine every 20 ms; the engine's frames go back as the peer's audio track (aiortc encodes them
to Opus). It reports ``inbound-ai-started`` and ``inbound-ended`` (source ``vnum``) to the
request's ``callbackUrl``. It ends when the engine ends the call, at ``maxSeconds``, or when the
browser leaves (``empty-room`` if it never spoke, else ``far-hangup``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque

import numpy as np
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
from av import AudioFrame

from switchboard.bridge.protocol import AiPeerRequest, Callback, EndedFields
from switchboard.mediabridge.calls import utc_now
from switchboard.mediabridge.conversation import decision, turns_of
from switchboard.mediabridge.engines.base import (
    FRAME_BYTES,
    FRAME_SAMPLES,
    SAMPLE_RATE,
    Conversation,
    Engine,
    EngineError,
    EngineSession,
    FinishReason,
    Record,
)
from switchboard.mediabridge.engines.resample import StreamResampler
from switchboard.mediabridge.platform import EventQueue, PlatformClient, event_id
from switchboard.webrtc.mesh import SIGNALING_ERRORS, MeshPeer
from switchboard.webrtc.tracks import PacedTrack, pcm_frame

log = logging.getLogger("switchboard.mediabridge.rooms.aipeer")

SILENCE = b"\x00" * FRAME_BYTES
INBOX_FRAMES = 10
CONNECT_TIMEOUT_SEC = 30.0
DEFAULT_MAX_SECONDS = 3600


class EngineTrack(PacedTrack):
    """The engine's voice, one 20 ms frame per ``recv``; each tick also feeds the engine what
    the browser said in the meantime (the track's pacing is the conversation's clock)."""

    kind = "audio"

    def __init__(self, session: EngineSession, inbox: deque[bytes]) -> None:
        super().__init__(rate=SAMPLE_RATE, step=FRAME_SAMPLES)
        self.session = session
        self.inbox = inbox
        self.feeding = True

    def make(self, pts: int) -> AudioFrame:
        if self.feeding:
            self.session.feed(self.inbox.popleft() if self.inbox else SILENCE)
        return pcm_frame(self.session.next_frame() or SILENCE, sample_rate=SAMPLE_RATE)


def to_pcm8k(frame: AudioFrame, resampler: StreamResampler) -> bytes:
    """One decoded frame as 8 kHz mono PCM16 (first channel)."""
    data = frame.to_ndarray()
    channels = len(frame.layout.channels)
    mono = data[0] if frame.format.is_planar else data.reshape(-1, channels)[:, 0]
    if mono.dtype.kind == "f":
        mono = np.clip(mono * 32767, -32768, 32767)
    return resampler(mono.astype("<i2").tobytes())


class AiPeer:
    def __init__(self, request: AiPeerRequest, engine: Engine, platform: PlatformClient) -> None:
        self.request = request
        self.engine = engine
        self.events = EventQueue(platform, request.callback_url)
        self.inbox: deque[bytes] = deque(maxlen=INBOX_FRAMES)
        max_seconds = request.max_seconds or DEFAULT_MAX_SECONDS
        self.max_seconds = max_seconds
        self.session = engine.session(Conversation(
            call_id=request.call_id, direction="inbound", model=request.model,
            voice=request.voice, language=request.language, max_seconds=max_seconds,
            system_prompt=request.system_prompt, api_key=request.api_key,
        ))  # fmt: skip
        self.track = EngineTrack(self.session, self.inbox)
        self.connected = False

    def emit(self, kind: str, **extra: object) -> None:
        r = self.request
        self.events.emit(Callback.model_validate({
            "event_id": event_id(), "type": kind, "call_id": r.call_id, "attempt": 1,
            "ts": utc_now(), "tenant": r.tenant, "source": "vnum", "number": r.number,
            "room": r.room, "display_name": r.name, "voice": r.voice, "language": r.language,
            "model": r.model, **extra,
        }))  # fmt: skip

    async def run(self) -> None:
        started = time.monotonic()
        record: Record | None = None
        outcome = ""
        r = self.request
        try:
            async with MeshPeer(
                r.signal_url, name=r.name or "AI", role="ai-vnum", token=r.join_token,
                track=self.track, listen=self._listen,
            ) as mesh:  # fmt: skip
                record, outcome = await self._talk(mesh)
        except SIGNALING_ERRORS as exc:
            log.warning("AI peer of %s: signaling failed: %s", r.call_id, exc)
            record = record or Record(error_detail=f"the room's signaling failed ({exc})")
        finally:
            self.track.stop()
        record = record or Record(error_detail="the AI peer ended before the call")
        ended = EndedFields(
            outcome=outcome, answered=self.connected,
            talk_sec=round(time.monotonic() - started),
            error_detail=record.error_detail if not outcome else "",
            input_turns=record.input_turns, output_turns=record.output_turns,
            tokens_prompt=record.tokens_prompt, tokens_total=record.tokens_total,
            turns=turns_of(record.turns),
        )  # fmt: skip
        self.emit("inbound-ended", ended=ended)
        await self.events.drain()

    async def _talk(self, mesh: MeshPeer) -> tuple[Record, str]:
        self.connected = await mesh.wait_connected(CONNECT_TIMEOUT_SEC)
        if not self.connected:
            return Record(), "empty-room"
        try:
            await self.session.start()
        except EngineError as exc:
            return Record(error_detail=str(exc)), ""
        self.emit("inbound-ai-started")
        signal = asyncio.ensure_future(self.session.signal())
        limit = asyncio.ensure_future(asyncio.sleep(max(1, self.max_seconds)))
        left = asyncio.ensure_future(mesh.gone.wait())
        done, pending = await asyncio.wait({signal, limit, left},
                                           return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        for task in pending:
            task.cancel()
        reason: FinishReason = "engine"
        outcome = ""
        failure = ""
        if signal in done:
            outcome, failure = decision(signal)
        elif limit in done:
            reason, outcome = "max-duration", "max-duration"
        else:
            reason = "far-hangup"
        self.track.feeding = False
        try:
            record = await self.session.finish(reason)
        except EngineError as exc:
            record = Record(error_detail=str(exc))
        if reason == "far-hangup":
            outcome = "far-hangup" if record.input_turns else "empty-room"
        if failure:
            record.error_detail, outcome = failure, ""
        return record, outcome

    async def _listen(self, track: MediaStreamTrack) -> None:
        resampler: StreamResampler | None = None
        pending = b""
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            if not isinstance(frame, AudioFrame):
                continue
            if resampler is None:
                resampler = StreamResampler(frame.sample_rate, SAMPLE_RATE)
            pending += to_pcm8k(frame, resampler)
            while len(pending) >= FRAME_BYTES:
                self.inbox.append(pending[:FRAME_BYTES])
                pending = pending[FRAME_BYTES:]


class AiPeers:
    """The AI peers this bridge runs."""

    def __init__(self, engine: Engine, platform: PlatformClient) -> None:
        self.engine = engine
        self.platform = platform
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, request: AiPeerRequest) -> None:
        task = asyncio.ensure_future(AiPeer(request, self.engine, self.platform).run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
