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
import fractions
import logging
import time
from collections import deque
from typing import Any

import aiohttp
import numpy as np
import orjson
from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
from aiortc.sdp import candidate_from_sdp
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

log = logging.getLogger("switchboard.mediabridge.rooms.aipeer")

SILENCE = b"\x00" * FRAME_BYTES
INBOX_FRAMES = 10
CONNECT_TIMEOUT_SEC = 30.0
DEFAULT_MAX_SECONDS = 3600


class EngineTrack(MediaStreamTrack):
    """The engine's voice, one 20 ms frame per ``recv``; each tick also feeds the engine what
    the browser said in the meantime (the track's pacing is the conversation's clock)."""

    kind = "audio"

    def __init__(self, session: EngineSession, inbox: deque[bytes]) -> None:
        super().__init__()
        self.session = session
        self.inbox = inbox
        self.feeding = True
        self._start = 0.0
        self._timestamp = -1

    async def recv(self) -> AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        if self._timestamp < 0:
            self._start, self._timestamp = time.time(), 0
        else:
            self._timestamp += FRAME_SAMPLES
            await asyncio.sleep(self._start + self._timestamp / SAMPLE_RATE - time.time())
        if self.feeding:
            self.session.feed(self.inbox.popleft() if self.inbox else SILENCE)
        pcm = self.session.next_frame() or SILENCE
        frame = AudioFrame(format="s16", layout="mono", samples=FRAME_SAMPLES)
        frame.planes[0].update(pcm)
        frame.pts = self._timestamp
        frame.sample_rate = SAMPLE_RATE
        frame.time_base = fractions.Fraction(1, SAMPLE_RATE)
        return frame


def to_pcm8k(frame: AudioFrame, resampler: StreamResampler) -> bytes:
    """One decoded frame as 8 kHz mono PCM16 (first channel)."""
    data = frame.to_ndarray()
    channels = len(frame.layout.channels)
    mono = data[0] if frame.format.is_planar else data.reshape(-1, channels)[:, 0]
    if mono.dtype.kind == "f":
        mono = np.clip(mono * 32767, -32768, 32767)
    return resampler(mono.astype("<i2").tobytes())


def ice_servers(listed: object) -> list[RTCIceServer]:
    """The ``welcome``'s ``iceServers`` (the browser's format: ``urls``, ``username``,
    ``credential``), the ones that parse."""
    found = []
    for server in listed if isinstance(listed, list) else []:
        if isinstance(server, dict) and isinstance(server.get("urls"), str | list):
            found.append(RTCIceServer(
                urls=server["urls"], username=server.get("username"),
                credential=server.get("credential"),
            ))  # fmt: skip
    return found


class AiPeer:
    def __init__(self, request: AiPeerRequest, engine: Engine, platform: PlatformClient) -> None:
        self.request = request
        self.engine = engine
        self.events = EventQueue(platform, request.callback_url)
        self.inbox: deque[bytes] = deque(maxlen=INBOX_FRAMES)
        self.pcs: dict[str, RTCPeerConnection] = {}
        self.peer_id = ""
        self.connected = asyncio.Event()
        self.far_left = asyncio.Event()
        self._listening: set[asyncio.Task[None]] = set()
        self.ice_servers: list[RTCIceServer] = []
        max_seconds = request.max_seconds or DEFAULT_MAX_SECONDS
        self.max_seconds = max_seconds
        self.session = engine.session(Conversation(
            call_id=request.call_id, direction="inbound", model=request.model,
            voice=request.voice, language=request.language, max_seconds=max_seconds,
            system_prompt=request.system_prompt, api_key=request.api_key,
        ))  # fmt: skip
        self.track = EngineTrack(self.session, self.inbox)

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
        try:
            async with (
                aiohttp.ClientSession() as http,
                http.ws_connect(self.request.signal_url, heartbeat=20) as ws,
            ):
                record, outcome = await self._talk(ws)
                with contextlib.suppress(Exception):
                    await ws.send_str(orjson.dumps({"type": "leave"}).decode())
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.warning("AI peer of %s: signaling failed: %s", self.request.call_id, exc)
            record = record or Record(error_detail=f"the room's signaling failed ({exc})")
        finally:
            self.track.stop()
            for pc in self.pcs.values():
                await pc.close()
        record = record or Record(error_detail="the AI peer ended before the call")
        ended = EndedFields(
            outcome=outcome, answered=self.connected.is_set(),
            talk_sec=round(time.monotonic() - started),
            error_detail=record.error_detail if not outcome else "",
            input_turns=record.input_turns, output_turns=record.output_turns,
            tokens_prompt=record.tokens_prompt, tokens_total=record.tokens_total,
            turns=turns_of(record.turns),
        )  # fmt: skip
        self.emit("inbound-ended", ended=ended)
        await self.events.drain()

    async def _talk(self, ws: aiohttp.ClientWebSocketResponse) -> tuple[Record, str]:
        r = self.request
        await ws.send_str(orjson.dumps(
            {"type": "join", "name": r.name or "AI", "role": "ai-vnum", "token": r.join_token}
        ).decode())  # fmt: skip
        reader = asyncio.ensure_future(self._read(ws))
        connected = asyncio.ensure_future(self.connected.wait())
        gone = asyncio.ensure_future(self.far_left.wait())
        await asyncio.wait({connected, gone, reader}, timeout=CONNECT_TIMEOUT_SEC,
                           return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        connected.cancel()
        gone.cancel()
        if not self.connected.is_set():
            reader.cancel()
            return Record(), "empty-room"
        try:
            await self.session.start()
        except EngineError as exc:
            reader.cancel()
            return Record(error_detail=str(exc)), ""
        self.emit("inbound-ai-started")
        signal = asyncio.ensure_future(self.session.signal())
        limit = asyncio.ensure_future(asyncio.sleep(max(1, self.max_seconds)))
        left = asyncio.ensure_future(self.far_left.wait())
        done, pending = await asyncio.wait({signal, limit, left, reader},
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

    async def _read(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        """Signaling messages until the socket closes (then the browser counts as gone)."""
        async for message in ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            try:
                data = orjson.loads(message.data)
            except orjson.JSONDecodeError:
                continue
            if isinstance(data, dict):
                await self._on(ws, data)
        self.far_left.set()

    async def _on(self, ws: aiohttp.ClientWebSocketResponse, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "welcome":
            self.peer_id = str(data.get("peerId", ""))
            self.ice_servers = ice_servers(data.get("iceServers"))
            for peer in data.get("peers") or []:
                other = str(peer.get("peerId", ""))
                if other and other != self.peer_id:
                    pc = self._pc(other)
                    await pc.setLocalDescription(await pc.createOffer())
                    await self._send(ws, {"type": "offer", "to": other,
                                          "sdp": pc.localDescription.sdp})  # fmt: skip
        elif kind == "offer":
            other = str(data.get("from", ""))
            old = self.pcs.pop(other, None)
            if old is not None:
                await old.close()
            pc = self._pc(other)
            await pc.setRemoteDescription(RTCSessionDescription(str(data["sdp"]), "offer"))
            await pc.setLocalDescription(await pc.createAnswer())
            await self._send(ws, {"type": "answer", "to": other, "sdp": pc.localDescription.sdp})
        elif kind == "answer":
            offered = self.pcs.get(str(data.get("from", "")))
            if offered is not None and offered.signalingState == "have-local-offer":
                answer = RTCSessionDescription(str(data["sdp"]), "answer")
                await offered.setRemoteDescription(answer)
        elif kind == "candidate":
            target = self.pcs.get(str(data.get("from", "")))
            found = data.get("candidate")
            if target is not None and isinstance(found, dict) and found.get("candidate"):
                candidate = candidate_from_sdp(str(found["candidate"]).removeprefix("candidate:"))
                candidate.sdpMid = found.get("sdpMid")
                candidate.sdpMLineIndex = found.get("sdpMLineIndex")
                await target.addIceCandidate(candidate)
        elif kind == "peer-left":
            gone = self.pcs.pop(str(data.get("peerId", "")), None)
            if gone is not None:
                await gone.close()
            if not self.pcs:
                self.far_left.set()

    async def _send(self, ws: aiohttp.ClientWebSocketResponse, data: dict[str, Any]) -> None:
        await ws.send_str(orjson.dumps(data).decode())

    def _pc(self, other: str) -> RTCPeerConnection:
        pc = RTCPeerConnection(RTCConfiguration(iceServers=self.ice_servers))
        self.pcs[other] = pc
        pc.addTrack(self.track)

        @pc.on("connectionstatechange")
        def changed() -> None:
            if pc.connectionState == "connected":
                self.connected.set()

        @pc.on("track")
        def on_track(track: MediaStreamTrack) -> None:
            if track.kind == "audio":
                listening = asyncio.ensure_future(self._listen(track))
                self._listening.add(listening)
                listening.add_done_callback(self._listening.discard)

        return pc

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
