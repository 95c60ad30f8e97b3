"""Room peers with synthetic media: a signaling client that follows docs/rooms.md as the room
page's room.js does, for ``switchboard sim room`` and the room tests.

A peer joins over the public WebSocket, offers mesh connections to the peers of its
``welcome``, answers the offers of later joiners, and on ``mode`` ``sfu`` migrates
make-before-break: it publishes (``sfu-offer``), subscribes to each ``publisher-added`` and
closes a mesh connection once both directions with that peer go through the SFU. Media is aiortc
with a synthetic 160x120 video and a silent or given audio track, cheap on a small machine.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import numpy as np
import orjson
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import AudioStreamTrack, MediaStreamError, MediaStreamTrack
from av import VideoFrame
from websockets.asyncio.client import ClientConnection

from switchboard.webrtc.tracks import PacedTrack


class SmallVideo(PacedTrack):
    """Synthetic 160x120 video at 15 fps: cheap to encode on a small machine."""

    kind = "video"

    def __init__(self) -> None:
        super().__init__(rate=90000, step=6000)
        self._image = np.full((120, 160, 3), 90, dtype=np.uint8)

    def make(self, pts: int) -> VideoFrame:
        return VideoFrame.from_ndarray(self._image, format="bgr24")


def _pc() -> RTCPeerConnection:
    return RTCPeerConnection(RTCConfiguration(iceServers=[]))


def _with_media(
    pc: RTCPeerConnection, video: bool = True, audio: MediaStreamTrack | None = None
) -> RTCPeerConnection:
    pc.addTrack(audio or AudioStreamTrack())
    if video:
        pc.addTrack(SmallVideo())
    return pc


class RoomPeer:
    """A signaling client with aiortc media, following docs/rooms.md like room.js: mesh offers
    from the joiner; on ``mode`` sfu it publishes, subscribes to each ``publisher-added`` and
    closes a mesh connection once both directions between the two peers go through the SFU
    (its own subscription connected, and ``subscriber-connected`` for the other)."""

    def __init__(
        self, ws: ClientConnection, name: str, microphone: MediaStreamTrack | None = None
    ) -> None:
        self.ws, self.name = ws, name
        self.microphone = microphone  # for the first mesh edge, else silence
        self.peer_id = ""
        self.mode = "mesh"
        self.modes: list[str] = []  # every mode the room told this peer of, in order
        self.mesh: dict[str, RTCPeerConnection] = {}
        self.publisher: RTCPeerConnection | None = None
        self.subscribers: dict[str, RTCPeerConnection] = {}
        self.frames: dict[str, int] = {}  # decoded video frames per remote peer
        self.errors: list[dict[str, Any]] = []
        self.heard_by: set[str] = set()  # peers receiving this one through the SFU
        # (peer, whether its SFU edge was connected) for each mesh edge, as it closed
        self.mesh_closed: list[tuple[str, bool]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.Task[None] | None = None

    async def send(self, **message: Any) -> None:
        await self.ws.send(orjson.dumps(message).decode())

    async def join(self, **extra: Any) -> None:
        await self.send(type="join", name=self.name, **extra)
        self._loop = asyncio.create_task(self._run())

    async def _run(self) -> None:
        with contextlib.suppress(Exception):
            async for frame in self.ws:
                message = orjson.loads(frame)
                await getattr(self, "on_" + message["type"].replace("-", "_"), self._ignore)(
                    message
                )

    async def _ignore(self, message: dict[str, Any]) -> None:
        pass

    def _count_frames(self, peer_id: str, pc: RTCPeerConnection) -> None:
        @pc.on("track")
        def on_track(track: MediaStreamTrack) -> None:
            async def drain() -> None:
                with contextlib.suppress(MediaStreamError):
                    while True:
                        await track.recv()
                        if track.kind == "video":
                            self.frames[peer_id] = self.frames.get(peer_id, 0) + 1

            task = asyncio.ensure_future(drain())
            self._tasks.add(task)

    def _mesh(self, other: str, video: bool = True) -> RTCPeerConnection:
        microphone, self.microphone = self.microphone, None
        pc = self.mesh[other] = _with_media(_pc(), video, microphone)
        self._count_frames(other, pc)

        @pc.on("connectionstatechange")
        def on_state() -> None:
            if pc.connectionState in ("closed", "failed"):
                sfu = self.subscribers.get(other)
                self.mesh_closed.append(
                    (other, sfu is not None and sfu.connectionState == "connected")
                )

        return pc

    async def on_welcome(self, message: dict[str, Any]) -> None:
        self.peer_id, self.mode = message["peerId"], message["mode"]
        self.modes.append(self.mode)
        for other in message["peers"]:
            pc = self._mesh(other["peerId"])
            await pc.setLocalDescription(await pc.createOffer())
            await self.send(type="offer", to=other["peerId"], sdp=pc.localDescription.sdp)

    async def on_offer(self, message: dict[str, Any]) -> None:
        pc = self._mesh(message["from"], video="m=video" in message["sdp"])
        await pc.setRemoteDescription(RTCSessionDescription(message["sdp"], "offer"))
        await pc.setLocalDescription(await pc.createAnswer())
        await self.send(type="answer", to=message["from"], sdp=pc.localDescription.sdp)

    async def on_answer(self, message: dict[str, Any]) -> None:
        await self.mesh[message["from"]].setRemoteDescription(
            RTCSessionDescription(message["sdp"], "answer")
        )

    async def on_mode(self, message: dict[str, Any]) -> None:
        self.mode = message["mode"]
        if self.modes[-1:] != [self.mode]:
            self.modes.append(self.mode)
        if self.mode != "sfu":  # a demote: no publisher to offer (the SFU would refuse it)
            return
        pc = self.publisher = _with_media(_pc())
        await pc.setLocalDescription(await pc.createOffer())
        await self.send(type="sfu-offer", sdp=pc.localDescription.sdp)

    async def on_sfu_answer(self, message: dict[str, Any]) -> None:
        assert self.publisher is not None
        await self.publisher.setRemoteDescription(RTCSessionDescription(message["sdp"], "answer"))

    async def on_publisher_added(self, message: dict[str, Any]) -> None:
        if message["peerId"] not in self.subscribers:
            await self.send(type="sfu-subscribe-offer", publisherPeerId=message["peerId"])

    async def on_subscriber_connected(self, message: dict[str, Any]) -> None:
        self.heard_by.add(message["peerId"])
        await self._break(message["peerId"])

    async def on_sfu_subscribe_offer(self, message: dict[str, Any]) -> None:
        publisher = message["publisherPeerId"]
        pc = self.subscribers[publisher] = _pc()
        self._count_frames(publisher, pc)

        @pc.on("connectionstatechange")
        async def on_state() -> None:
            if pc.connectionState == "connected":
                await self._break(publisher)

        await pc.setRemoteDescription(RTCSessionDescription(message["sdp"], "offer"))
        await pc.setLocalDescription(await pc.createAnswer())
        await self.send(type="sfu-subscribe-answer", publisherPeerId=publisher,
                        sdp=pc.localDescription.sdp)  # fmt: skip

    async def _break(self, other: str) -> None:
        """Close the mesh edge to ``other`` once both directions go through the SFU."""
        subscription = self.subscribers.get(other)
        if subscription is None or subscription.connectionState != "connected":
            return
        if other in self.heard_by and other in self.mesh:
            self.frames.pop(other, None)  # count what comes through the SFU only
            await self.mesh.pop(other).close()

    async def on_error(self, message: dict[str, Any]) -> None:
        self.errors.append(message)

    async def close(self) -> None:
        for pc in [*self.mesh.values(), *self.subscribers.values(), self.publisher]:
            if pc is not None:
                await pc.close()
        await self.ws.close()
        if self._loop is not None:
            await asyncio.wait_for(self._loop, 5)
        for task in self._tasks:
            task.cancel()
