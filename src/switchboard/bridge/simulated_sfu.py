"""The simulated bridge's SFU: an in-process selective forwarder built on aiortc.

Each publisher's offer is answered by a receive-only peer connection; the tracks it receives
are relayed (``aiortc.contrib.media.MediaRelay``) to one send-only peer connection per
(publisher, subscriber) pair, whose offer the SFU makes. A connection that comes up is reported
as a ``RoomCallback`` (``publisher-connected``, ``subscriber-connected``), as the real bridge
does with Janus. Media is decoded and re-encoded, so it suits a laptop, not a crowd.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.contrib.media import MediaRelay
from aiortc.mediastreams import MediaStreamTrack

from switchboard.bridge.protocol import RoomCallback

log = logging.getLogger("switchboard.bridge.sfu")

Report = Callable[[RoomCallback], Awaitable[object]]


class SfuRefusal(Exception):
    """A request the SFU cannot carry out: ``code`` as in docs/bridge-protocol.md."""

    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class _Room:
    tenant: str
    room: str
    publishers: dict[str, RTCPeerConnection] = field(default_factory=dict)
    tracks: dict[str, list[MediaStreamTrack]] = field(default_factory=dict)
    subscribers: dict[tuple[str, str], RTCPeerConnection] = field(default_factory=dict)


class SimulatedSfu:
    def __init__(
        self,
        *,
        report: Report,
        new_id: Callable[[], str],
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._report = report
        self._new_id = new_id
        self._now = now
        self._relay = MediaRelay()
        self.rooms: dict[tuple[str, str], _Room] = {}
        self._tasks: set[asyncio.Task[object]] = set()

    def open(self, tenant: str, room: str) -> None:
        self.rooms.setdefault((tenant, room), _Room(tenant, room))

    def _room(self, tenant: str, room: str) -> _Room:
        found = self.rooms.get((tenant, room))
        if found is None:
            raise SfuRefusal("unknown_room", 404, "the room is not open on the SFU (promote it)")
        return found

    async def close(self, tenant: str, room: str) -> None:
        opened = self.rooms.pop((tenant, room), None)
        if opened is not None:
            for pc in [*opened.publishers.values(), *opened.subscribers.values()]:
                await pc.close()

    async def aclose(self) -> None:
        for key in list(self.rooms):
            await self.close(*key)
        for task in list(self._tasks):
            task.cancel()

    def _on_connected(
        self, pc: RTCPeerConnection, outbound: bool, event: Callable[[int], RoomCallback]
    ) -> None:
        """Report ``pc`` once it is connected, with its RTP packets so far (received from a
        publisher, sent to a subscriber), as the real bridge does from Janus's counters."""
        reported = False

        async def report() -> None:
            stats = await pc.getStats()
            kind, field_name = (
                ("outbound-rtp", "packetsSent") if outbound else ("inbound-rtp", "packetsReceived")
            )
            packets = sum(int(getattr(s, field_name, 0)) for s in stats.values() if s.type == kind)
            await self._report(event(packets))

        @pc.on("connectionstatechange")
        def _state() -> None:
            nonlocal reported
            if pc.connectionState == "connected" and not reported:
                reported = True
                task = asyncio.ensure_future(report())
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def publish(self, tenant: str, room: str, peer_id: str, sdp: str) -> str:
        opened = self._room(tenant, room)
        previous = opened.publishers.pop(peer_id, None)
        if previous is not None:
            await previous.close()
        pc = RTCPeerConnection()
        tracks: list[MediaStreamTrack] = []
        pc.on("track", tracks.append)
        self._on_connected(pc, False, lambda packets: RoomCallback(
            event_id=self._new_id(), tenant=tenant, room=room, type="publisher-connected",
            peer_id=peer_id, connected_utc=_utc(self._now()), packets_at_conn=packets,
        ))  # fmt: skip
        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="offer"))
            await pc.setLocalDescription(await pc.createAnswer())
        except Exception as exc:  # aiortc raises ValueError and others on a bad SDP
            await pc.close()
            raise SfuRefusal("bad_sdp", 400, f"the SFU refused the SDP: {exc}"[:300]) from None
        opened.publishers[peer_id] = pc
        opened.tracks[peer_id] = tracks
        return str(pc.localDescription.sdp)

    async def subscribe(self, tenant: str, room: str, publisher: str, subscriber: str) -> str:
        opened = self._room(tenant, room)
        tracks = opened.tracks.get(publisher)
        if not tracks:
            raise SfuRefusal("unknown_peer", 404, f"{publisher} does not publish on the SFU")
        previous = opened.subscribers.pop((publisher, subscriber), None)
        if previous is not None:
            await previous.close()
        pc = RTCPeerConnection()
        for track in tracks:
            pc.addTrack(self._relay.subscribe(track, buffered=False))
        self._on_connected(pc, True, lambda packets: RoomCallback(
            event_id=self._new_id(), tenant=tenant, room=room, type="subscriber-connected",
            publisher_peer_id=publisher, subscriber_peer_id=subscriber,
            connected_utc=_utc(self._now()), packets_forwarded_at_conn=packets,
        ))  # fmt: skip
        await pc.setLocalDescription(await pc.createOffer())
        opened.subscribers[(publisher, subscriber)] = pc
        return str(pc.localDescription.sdp)

    async def answer(self, tenant: str, room: str, publisher: str, subscriber: str,
                     sdp: str) -> None:  # fmt: skip
        opened = self._room(tenant, room)
        pc = opened.subscribers.get((publisher, subscriber))
        if pc is None or pc.signalingState != "have-local-offer":
            raise SfuRefusal("unknown_peer", 404, "no subscription of that pair awaits an answer")
        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="answer"))
        except Exception as exc:
            raise SfuRefusal("bad_sdp", 400, f"the SFU refused the SDP: {exc}"[:300]) from None

    async def leave(self, tenant: str, room: str, peer_id: str) -> None:
        opened = self.rooms.get((tenant, room))
        if opened is None:
            return
        gone = [opened.publishers.pop(peer_id)] if peer_id in opened.publishers else []
        opened.tracks.pop(peer_id, None)
        pairs = [pair for pair in opened.subscribers if peer_id in pair]
        gone += [opened.subscribers.pop(pair) for pair in pairs]
        for pc in gone:
            await pc.close()
