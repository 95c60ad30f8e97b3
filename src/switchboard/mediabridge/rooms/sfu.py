"""The rooms on the SFU: one Janus VideoRoom per platform room, one handle per publisher and
one per (publisher, subscriber) edge.

The Janus room id is derived from the tenant and the room name (the first 52 bits of a SHA-256,
so it stays exact in JSON numbers everywhere). A connection that comes up (Janus's ``webrtcup``)
is reported to the platform as a ``RoomCallback`` with the packet counters of the admin API's
``handle_info`` at that moment (docs/decisions/0821-sfu-packet-counters.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from switchboard.bridge.protocol import RoomCallback
from switchboard.mediabridge.rooms.janus import (
    JSEP_INVALID_SDP,
    JSEP_UNKNOWN_TYPE,
    Handle,
    JanusClient,
    JanusError,
    JanusUnreachable,
)

log = logging.getLogger("switchboard.mediabridge.rooms")

PLUGIN = "janus.plugin.videoroom"
MAX_PUBLISHERS = 100
# VideoRoom error codes (janus_videoroom.c)
NO_SUCH_ROOM = 426
ROOM_EXISTS = 427
NO_SUCH_FEED = 428
INVALID_SDP_TYPE = 431
INVALID_SDP = 437
BAD_SDP_CODES = {JSEP_UNKNOWN_TYPE, JSEP_INVALID_SDP, INVALID_SDP_TYPE, INVALID_SDP}


class RoomFailure(Exception):
    """A room request that cannot be carried out: ``code`` as in docs/bridge-protocol.md."""

    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


def janus_room_id(tenant: str, room: str) -> int:
    digest = hashlib.sha256(f"{tenant}\x00{room}".encode()).digest()
    return int.from_bytes(digest[:7], "big") >> 4 or 1


def _failure(exc: JanusError | JanusUnreachable) -> RoomFailure:
    if isinstance(exc, JanusUnreachable):
        return RoomFailure("sfu_unreachable", 503, str(exc))
    if exc.code in BAD_SDP_CODES:
        return RoomFailure("bad_sdp", 400, f"the SFU refused the SDP: {exc.reason}")
    if exc.code == NO_SUCH_ROOM:
        return RoomFailure("unknown_room", 404, "the room is not open on the SFU")
    return RoomFailure("sfu_rejected", 502, f"the SFU refused: {exc.code} {exc.reason}")


def _packets(info: dict[str, Any], direction: str) -> int:
    """The sum over the PeerConnection's media of ``stats.<direction>.packets``."""
    media = ((info.get("webrtc") or {}).get("media")) or {}
    total = 0
    for medium in media.values():
        stats = (medium.get("stats") or {}).get(direction) or {}
        total += int(stats.get("packets", 0))
    return total


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class SfuRoom:
    tenant: str
    room: str
    janus_id: int
    publishers: dict[str, Handle] = field(default_factory=dict)
    feeds: dict[str, int] = field(default_factory=dict)
    subscribers: dict[tuple[str, str], Handle] = field(default_factory=dict)


Report = Callable[[RoomCallback], Awaitable[object]]


class SfuRooms:
    def __init__(
        self,
        janus: JanusClient,
        *,
        report: Report,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        new_id: Callable[[], str],
    ) -> None:
        self.janus = janus
        janus.on_reset = self._reset
        self._report = report
        self._now = now
        self._new_id = new_id
        self.rooms: dict[tuple[str, str], SfuRoom] = {}
        self._admin: Handle | None = None
        self._tasks: set[asyncio.Task[object]] = set()

    def _reset(self) -> None:
        """Janus lost our session: every room and handle with it."""
        self._admin = None
        self.rooms.clear()

    async def _attach(self, opened: SfuRoom) -> Handle:
        """A handle for a request in ``opened``; the room is gone if Janus restarted meanwhile."""
        handle = await self.janus.attach(PLUGIN)
        if self.rooms.get((opened.tenant, opened.room)) is not opened:
            await handle.detach()
            raise RoomFailure("unknown_room", 404, "the SFU restarted: promote the room again")
        return handle

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await self.janus.aclose()

    async def _admin_handle(self) -> Handle:
        if self._admin is None or self._admin.detached:
            self._admin = await self.janus.attach(PLUGIN)
        return self._admin

    def _room(self, tenant: str, room: str) -> SfuRoom:
        found = self.rooms.get((tenant, room))
        if found is None:
            raise RoomFailure("unknown_room", 404, "the room is not open on the SFU (promote it)")
        return found

    async def promote(self, tenant: str, room: str) -> SfuRoom:
        existing = self.rooms.get((tenant, room))
        if existing is not None:
            return existing
        janus_id = janus_room_id(tenant, room)
        try:
            handle = await self._admin_handle()
            await handle.message({
                "request": "create", "room": janus_id, "publishers": MAX_PUBLISHERS,
                "is_private": True, "permanent": False, "description": f"{tenant}/{room}",
                "audiocodec": "opus", "videocodec": "vp8,vp9,h264",
            })  # fmt: skip
        except JanusError as exc:
            if exc.code != ROOM_EXISTS:
                raise _failure(exc) from None
        except JanusUnreachable as exc:
            raise _failure(exc) from None
        opened = SfuRoom(tenant=tenant, room=room, janus_id=janus_id)
        self.rooms[(tenant, room)] = opened
        return opened

    async def demote(self, tenant: str, room: str) -> None:
        """Close the room on Janus (idempotent: a room the SFU does not hold is closed)."""
        opened = self.rooms.pop((tenant, room), None)
        handles = [*opened.publishers.values(), *opened.subscribers.values()] if opened else []
        for handle in handles:
            await handle.detach()
        try:
            admin = await self._admin_handle()
            await admin.message({"request": "destroy", "room": janus_room_id(tenant, room)})
        except JanusError as exc:
            if exc.code != NO_SUCH_ROOM:
                raise _failure(exc) from None
        except JanusUnreachable as exc:
            raise _failure(exc) from None

    async def publish(self, tenant: str, room: str, peer_id: str, sdp: str) -> str:
        opened = self._room(tenant, room)
        previous = opened.publishers.pop(peer_id, None)
        if previous is not None:
            await previous.detach()
        handle: Handle | None = None
        try:
            handle = await self._attach(opened)
            handle.labels = {"peer": peer_id}
            handle.on_webrtcup = lambda h: self._connected(opened, h, "publisher")
            data, jsep = await handle.message(
                {"request": "joinandconfigure", "ptype": "publisher", "room": opened.janus_id,
                 "display": peer_id, "audio": True, "video": True},
                {"type": "offer", "sdp": sdp, "trickle": False},
            )  # fmt: skip
        except (JanusError, JanusUnreachable) as exc:
            if handle is not None:
                await handle.detach()
            raise _failure(exc) from None
        if jsep is None or jsep.get("type") != "answer":
            await handle.detach()
            raise RoomFailure("sfu_rejected", 502, "the SFU sent no answer")
        opened.publishers[peer_id] = handle
        opened.feeds[peer_id] = int(data.get("id", 0))
        return str(jsep["sdp"])

    async def subscribe(self, tenant: str, room: str, publisher: str, subscriber: str) -> str:
        opened = self._room(tenant, room)
        feed = opened.feeds.get(publisher)
        if feed is None:
            raise RoomFailure("unknown_peer", 404, f"{publisher} does not publish on the SFU")
        previous = opened.subscribers.pop((publisher, subscriber), None)
        if previous is not None:
            await previous.detach()
        handle: Handle | None = None
        try:
            handle = await self._attach(opened)
            handle.labels = {"publisher": publisher, "subscriber": subscriber}
            handle.on_webrtcup = lambda h: self._connected(opened, h, "subscriber")
            _data, jsep = await handle.message({
                "request": "join", "ptype": "subscriber", "room": opened.janus_id,
                "streams": [{"feed": feed}],
            })  # fmt: skip
        except (JanusError, JanusUnreachable) as exc:
            if handle is not None:
                await handle.detach()
            if isinstance(exc, JanusError) and exc.code == NO_SUCH_FEED:
                raise RoomFailure("unknown_peer", 404, f"{publisher} has no live feed") from None
            raise _failure(exc) from None
        if jsep is None or jsep.get("type") != "offer":
            await handle.detach()
            raise RoomFailure("sfu_rejected", 502, "the SFU sent no offer")
        opened.subscribers[(publisher, subscriber)] = handle
        return str(jsep["sdp"])

    async def answer(self, tenant: str, room: str, publisher: str, subscriber: str,
                     sdp: str) -> None:  # fmt: skip
        opened = self._room(tenant, room)
        handle = opened.subscribers.get((publisher, subscriber))
        if handle is None:
            raise RoomFailure("unknown_peer", 404, "no subscription of that pair awaits an answer")
        try:
            await handle.message(
                {"request": "start"}, {"type": "answer", "sdp": sdp, "trickle": False}
            )
        except (JanusError, JanusUnreachable) as exc:
            raise _failure(exc) from None

    async def leave(self, tenant: str, room: str, peer_id: str) -> None:
        opened = self.rooms.get((tenant, room))
        if opened is None:
            return
        gone = [opened.publishers.pop(peer_id)] if peer_id in opened.publishers else []
        opened.feeds.pop(peer_id, None)
        for pair in [p for p in opened.subscribers if peer_id in p]:
            gone.append(opened.subscribers.pop(pair))
        for handle in gone:
            await handle.detach()

    def _connected(self, opened: SfuRoom, handle: Handle, kind: str) -> None:
        task = asyncio.ensure_future(self._report_connected(opened, handle, kind))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _report_connected(self, opened: SfuRoom, handle: Handle, kind: str) -> None:
        connected = utc_text(self._now())
        packets = 0
        try:
            packets = _packets(await handle.info(), "in" if kind == "publisher" else "out")
        except (JanusError, JanusUnreachable) as exc:
            log.info("no packet counters for handle %s: %s", handle.id, exc)
        if kind == "publisher":
            event = RoomCallback(
                event_id=self._new_id(), tenant=opened.tenant, room=opened.room,
                type="publisher-connected", peer_id=handle.labels["peer"],
                connected_utc=connected, packets_at_conn=packets,
            )  # fmt: skip
        else:
            event = RoomCallback(
                event_id=self._new_id(), tenant=opened.tenant, room=opened.room,
                type="subscriber-connected", publisher_peer_id=handle.labels["publisher"],
                subscriber_peer_id=handle.labels["subscriber"], connected_utc=connected,
                packets_forwarded_at_conn=packets,
            )  # fmt: skip
        await self._report(event)
