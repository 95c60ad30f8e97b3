"""aiortc room peers shared by the SFU tests (Janus through the real bridge, and the simulated
bridge's in-process SFU): a client following docs/rooms.md like room.js, synthetic media, and
the mesh-to-SFU scenario with every proxy event asserted at the webhook receiver."""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import time
from typing import Any

import numpy as np
import orjson
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import AudioStreamTrack, MediaStreamError, MediaStreamTrack
from av import VideoFrame
from websockets.asyncio.client import ClientConnection

from switchboard.runtime import Runtime
from tests import factories
from tests.rooms.conftest import Server
from tests.rooms.test_cascade import named, set_sfu


class SmallVideo(MediaStreamTrack):
    """Synthetic 160x120 video at 15 fps: cheap to encode on a small machine."""

    kind = "video"

    def __init__(self) -> None:
        super().__init__()
        self._start = 0.0
        self._pts = -1
        self._image = np.full((120, 160, 3), 90, dtype=np.uint8)

    async def recv(self) -> VideoFrame:
        if self.readyState != "live":
            raise MediaStreamError
        if self._pts < 0:
            self._start, self._pts = time.time(), 0
        else:
            self._pts += 6000
            await asyncio.sleep(self._start + self._pts / 90000 - time.time())
        frame = VideoFrame.from_ndarray(self._image, format="bgr24")
        frame.pts, frame.time_base = self._pts, fractions.Fraction(1, 90000)
        return frame


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
            self._tasks.add(task)  # type: ignore[arg-type]

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


def describe(peers: list[RoomPeer]) -> list[dict[str, Any]]:
    return [{
        "name": p.name, "mode": p.mode, "mesh": {k: pc.connectionState for k, pc in p.mesh.items()},
        "publisher": p.publisher.connectionState if p.publisher else None,
        "subscribers": {k: pc.connectionState for k, pc in p.subscribers.items()},
        "errors": p.errors, "frames": p.frames,
    } for p in peers]  # fmt: skip


async def inbound_packets(pc: RTCPeerConnection) -> int:
    report = await pc.getStats()
    return sum(s.packetsReceived for s in report.values() if s.type == "inbound-rtp")


async def until(check: Any, within: float = 20.0, state: Any = None) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met in time: {state() if state else ''}")
        await asyncio.sleep(0.05)


async def three_peers_move_to_the_sfu(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    """A and B meet in mesh; C joins (threshold 2), everyone moves to the SFU make-before-break
    with media still flowing, and every cascade and ``sfu.*`` event reaches the receiver."""
    await set_sfu(runtime, acme, AutoPromoteHumanCount="2")
    peers: list[RoomPeer] = []
    try:
        for name in ("A", "B"):
            peers.append(RoomPeer(await server.peer(acme.host, "x"), name))
            await peers[-1].join()
        a, b = peers
        # mesh: A and B see each other's video before anyone else comes
        await until(lambda: a.frames.get(b.peer_id, 0) > 3 and b.frames.get(a.peer_id, 0) > 3)
        assert a.publisher is None
        peers.append(RoomPeer(await server.peer(acme.host, "x"), "C"))
        await peers[-1].join()  # the third human: promote

        def migrated() -> bool:
            return all(
                p.mode == "sfu" and not p.mesh and len(p.subscribers) == 2
                and all(pc.connectionState == "connected" for pc in p.subscribers.values())
                # the mesh edge's "closed" state arrives once its close has finished
                and len(set(p.mesh_closed)) == 2
                for p in peers
            )  # fmt: skip

        await until(migrated, 30, lambda: describe(peers))
        assert all(p.errors == [] for p in peers), [p.errors for p in peers]
        # make-before-break: a mesh edge closed (here or at the far end) only once the SFU
        # carried that peer's media here
        assert [sorted(set(p.mesh_closed)) for p in peers] == [
            sorted((o, True) for o in p.subscribers) for p in peers
        ]
        # media still flows, now through Janus: RTP and decoded frames rising on every edge
        before = [await inbound_packets(pc) for p in peers for pc in p.subscribers.values()]
        frames = [dict(p.frames) for p in peers]
        await until(lambda: all(
            p.frames.get(other, 0) > frames[i].get(other, 0) + 3
            for i, p in enumerate(peers) for other in p.subscribers
        ))  # fmt: skip
        after = [await inbound_packets(pc) for p in peers for pc in p.subscribers.values()]
        assert all(later > earlier > 0 for earlier, later in zip(before, after, strict=True))

        ids = {p.name: p.peer_id for p in peers}
        # 3 joins, the promote, 3 publisher offers and 6 subscriptions, 9 connections
        events = await hooks(22)
        assert named(events, "room.cascade.promoted") == [{
            "room": "x", "mode": "sfu", "reason": "auto-promote-join-human-count-3",
            "trigger": "auto-join", "humanCount": 3,
        }]  # fmt: skip
        offers = named(events, "sfu.offer.received")
        assert sorted(o["peerId"] for o in offers) == sorted(ids.values())
        for offer in offers:
            assert offer == {
                "room": "x", "peerId": offer["peerId"], "role": "human",
                "offerLen": offer["offerLen"], "outcome": "answer", "code": None,
                "phase": "publish", "httpStatus": 200,
            }  # fmt: skip
            assert offer["offerLen"] > 200
        pairs = {(p.peer_id, s) for p in peers for s in p.subscribers}
        subscribes = named(events, "sfu.subscribe.received")
        assert {(s["subscriberPeerId"], s["publisherPeerId"]) for s in subscribes} == pairs
        assert len(subscribes) == 6
        for subscribe in subscribes:
            assert subscribe == {
                "room": "x", "publisherPeerId": subscribe["publisherPeerId"],
                "subscriberPeerId": subscribe["subscriberPeerId"],
                "offerLen": subscribe["offerLen"], "outcome": "answer", "code": None,
                "phase": "subscribe", "httpStatus": 200,
            }  # fmt: skip
            assert subscribe["offerLen"] > 200
        published = named(events, "sfu.publisher.connected")
        assert sorted(e["peerId"] for e in published) == sorted(ids.values())
        for event in published:
            assert event == {
                "room": "x", "peerId": event["peerId"], "role": "human",
                "connectedUtc": event["connectedUtc"], "packetsAtConn": event["packetsAtConn"],
            }  # fmt: skip
            assert event["connectedUtc"].endswith("Z")
            assert isinstance(event["packetsAtConn"], int)
        edges = named(events, "sfu.subscriber.connected")
        assert {(e["subscriberPeerId"], e["publisherPeerId"]) for e in edges} == pairs
        for edge in edges:
            assert set(edge) == {"room", "publisherPeerId", "subscriberPeerId", "connectedUtc",
                                 "packetsForwardedAtConn"}  # fmt: skip
            assert edge["room"] == "x"
            assert isinstance(edge["packetsForwardedAtConn"], int)
    finally:
        for peer in peers:
            await peer.close()
