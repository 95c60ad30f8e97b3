"""The live rooms of this process: who is in which room, through which socket, and (when rooms
fan out across ``serve`` processes) who is in them through the other processes."""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from switchboard.platform.rooms.counts import (
    Bound,
    Counts,
    LocalCounts,
    SharedCounts,
    calls_per_ip,
    calls_per_number,
)
from switchboard.platform.rooms.detector import Detector
from switchboard.platform.rooms.fanout import Fanout, channel_of
from switchboard.platform.rooms.schemas import Mode, Pref, Role
from switchboard.runtime import PerRuntime

Send = Callable[[dict[str, Any]], Awaitable[None]]
Close = Callable[[int, str], Awaitable[None]]
RemoteOp = Callable[["LiveRoom", dict[str, Any]], Coroutine[Any, Any, None]]

FANOUT_LOST = 1012  # service restart: the client should rejoin
FANOUT_LOST_REASON = "room fan-out lost: rejoin"


async def _no_close(_code: int, _reason: str) -> None:
    return None


@dataclass(eq=False)
class CallHold:
    """An AI call to a virtual number, counted from its request until its caller or its AI
    peer leaves (``Hub.hold_call``)."""

    keys: tuple[str, ...]  # what it counts toward: its number and its caller's address
    call_id: str = ""
    ended: bool = False


@dataclass(eq=False)
class Peer:
    peer_id: str
    name: str
    role: Role
    verified: bool
    admin: bool
    ip: str
    pref: Pref
    send: Send
    join_path: str = "direct"
    close: Close = _no_close
    call: CallHold | None = None  # the AI call this peer asked for with its join

    def public(self) -> dict[str, Any]:
        return {"peerId": self.peer_id, "name": self.name, "role": self.role,
                "verified": self.verified}  # fmt: skip


@dataclass(eq=False)
class Member:
    """A peer of the room whose socket another ``serve`` process holds (``node``)."""

    peer_id: str
    name: str
    role: Role
    verified: bool
    pref: Pref
    node: str

    def public(self) -> dict[str, Any]:
        return {"peerId": self.peer_id, "name": self.name, "role": self.role,
                "verified": self.verified}  # fmt: skip


@dataclass(eq=False)
class LiveRoom:
    tenant_id: int
    tenant_name: str
    name: str
    mode: Mode = "mesh"
    lobby: bool = False
    peers: dict[str, Peer] = field(default_factory=dict)  # the sockets of this process
    waiting: dict[str, Peer] = field(default_factory=dict)
    remote: dict[str, Member] = field(default_factory=dict)  # peers of the other processes
    detector: Detector = field(default_factory=Detector)
    # The tenant's SFU tunables and the database version they were read at (service.py).
    tunables: tuple[tuple[int, int], dict[str, float]] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    fanout: Fanout | None = None
    counts: Counts = field(default_factory=LocalCounts)  # the lobby's, with the hub's others
    sockets: int = 0  # sockets of this process that entered the room and have not left it

    @property
    def channel(self) -> str:
        return channel_of(self.tenant_id, self.name)

    def members(self) -> list[Peer | Member]:
        return [*self.peers.values(), *self.remote.values()]

    @property
    def peer_count(self) -> int:
        return len(self.peers) + len(self.remote)

    @property
    def human_count(self) -> int:
        return sum(1 for p in self.members() if p.role == "human")

    def others(self, peer_id: str) -> list[Peer | Member]:
        return [p for p in self.members() if p.peer_id != peer_id]

    def has(self, peer_id: str) -> bool:
        return peer_id in self.peers or peer_id in self.remote

    async def enter_lobby(self, peer: Peer, most: int) -> bool:
        """``peer`` waits to be admitted, unless ``most`` peers wait already (in every process
        with the fan-out): then False."""
        if await self.counts.take(Bound(self.channel + ":waiting", most)) is not None:
            return False
        self.waiting[peer.peer_id] = peer
        return True

    async def leave_lobby(self, peer_id: str) -> Peer | None:
        """The peer waiting here as ``peer_id``, no longer waiting; None if none waits here."""
        peer = self.waiting.pop(peer_id, None)
        if peer is not None:
            await self.counts.give(self.channel + ":waiting")
        return peer

    async def broadcast(
        self, message: dict[str, Any], *, skip: str = "", verified_only: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        """To every peer of the room but ``skip``, in this process and through the fan-out."""
        for peer in list(self.peers.values()):
            if peer.peer_id != skip and (peer.verified or not verified_only):
                await peer.send(message)
        if self.fanout is not None:
            envelope = {"frame": message, "skip": skip, "verified": verified_only, **(extra or {})}
            await self.fanout.publish(self.channel, envelope)

    async def send_to(self, peer_id: str, message: dict[str, Any]) -> None:
        """To one peer: its socket here, or through the fan-out to the process holding it."""
        local = self.peers.get(peer_id)
        if local is not None:
            await local.send(message)
        elif self.fanout is not None:
            await self.fanout.publish(self.channel, {"frame": message, "to": peer_id})

    async def tell(self, op: str, **data: Any) -> None:
        """An operation for the other processes of the room (no frame for any socket)."""
        if self.fanout is not None:
            await self.fanout.publish(self.channel, {"op": op, **data})


class Hub:
    def __init__(self, fanout_url: str = "") -> None:
        self.rooms: dict[tuple[int, str], LiveRoom] = {}
        self.fanout = (
            Fanout(fanout_url, deliver=self._deliver, lost=self._lost) if fanout_url else None
        )
        self.remote_op: RemoteOp | None = None  # lobby admits and stats from other processes
        self._tasks: set[asyncio.Task[None]] = set()
        self._addresses: Counter[str] = Counter()  # open signaling sockets per client address
        # AI calls and lobbies: counted over every process with the fan-out (decision 0854)
        self.counts: Counts = SharedCounts(self.fanout) if self.fanout else LocalCounts()
        self._call_ids: dict[str, CallHold] = {}

    def hold_address(self, ip: str, most: int) -> bool:
        """One more socket from ``ip``, unless it holds ``most`` already (then False); counted
        in this process alone (decision 0850)."""
        if self._addresses[ip] >= most:
            return False
        self._addresses[ip] += 1
        return True

    def drop_address(self, ip: str) -> None:
        self._addresses[ip] -= 1
        if self._addresses[ip] <= 0:
            del self._addresses[ip]

    async def hold_call(
        self, number: tuple[int, str], ip: str, *, per_number: int, per_ip: int
    ) -> CallHold | str:
        """One more AI call to ``number`` (tenant id, number) from ``ip``, or why not."""
        by_number = Bound(calls_per_number(*number), per_number)
        by_ip = Bound(calls_per_ip(ip), per_ip)
        full = await self.counts.take(by_number, by_ip)
        if full is by_number:
            return f"{number[1]} takes {per_number} calls at once; try again later"
        if full is by_ip:
            return f"this address has {per_ip} calls to virtual numbers in progress"
        return CallHold((by_number.key, by_ip.key))

    def bind_call(self, hold: CallHold, call_id: str) -> None:
        """``hold`` is the call ``call_id``: its AI peer's leave ends it too."""
        hold.call_id = call_id
        if not hold.ended:
            self._call_ids[call_id] = hold

    async def end_call(self, hold: CallHold | None) -> None:
        """The call no longer counts (its caller or its AI peer left, or it never started);
        once, whichever comes first."""
        if hold is None or hold.ended:
            return
        hold.ended = True
        self._call_ids.pop(hold.call_id, None)
        await self.counts.give(*hold.keys)

    async def ai_peer_left(self, call_id: str, room: LiveRoom | None) -> None:
        """The AI peer of ``call_id`` left ``room``: the call ends here, or in the process of
        its caller, told through the room's channel."""
        hold = self._call_ids.get(call_id)
        if hold is not None:
            await self.end_call(hold)
        elif call_id and room is not None:
            await room.tell("call-ended", callId=call_id)

    def room(self, tenant_id: int, tenant_name: str, name: str) -> LiveRoom:
        """The live room, entered by one more socket of this process (``release`` when done)."""
        key = (tenant_id, name)
        found = self.rooms.get(key)
        if found is None:
            found = self.rooms[key] = self.detached(tenant_id, tenant_name, name)
        found.sockets += 1
        return found

    def detached(self, tenant_id: int, tenant_name: str, name: str) -> LiveRoom:
        """A room this process holds no socket of: reads its state, publishes to it."""
        return LiveRoom(tenant_id, tenant_name, name, fanout=self.fanout, counts=self.counts)

    def find(self, tenant_id: int, name: str) -> LiveRoom | None:
        return self.rooms.get((tenant_id, name))

    async def listen(self, room: LiveRoom) -> None:
        """Subscribe to the room's channel before its state is read (``FanoutLost`` if not)."""
        if self.fanout is not None:
            await self.fanout.subscribe(room.channel)

    async def release(self, room: LiveRoom) -> None:
        room.sockets -= 1
        if room.sockets > 0 or self.rooms.get((room.tenant_id, room.name)) is not room:
            return
        del self.rooms[(room.tenant_id, room.name)]
        if self.fanout is not None:
            await self.fanout.unsubscribe(room.channel)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` beside the channel's reader (which must not wait on a room's lock)."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _by_channel(self, channel: str) -> LiveRoom | None:
        tenant, _, name = channel.rpartition(":")
        try:
            return self.rooms.get((int(tenant.rpartition(":")[2]), name))
        except ValueError:
            return None

    async def _deliver(self, channel: str, envelope: dict[str, Any]) -> None:
        """A frame from another process: keep the room's view of it, hand it to our sockets."""
        room = self._by_channel(channel)
        if room is None:
            return
        frame: dict[str, Any] | None = envelope.get("frame")
        kind = frame.get("type") if frame else None
        if (member := envelope.get("member")) is not None:
            room.remote[member["peerId"]] = Member(
                member["peerId"], member["name"], member["role"], member["verified"],
                member["pref"], str(envelope.get("node", "")),
            )  # fmt: skip
        elif frame is not None and kind == "peer-left":
            room.remote.pop(frame["peerId"], None)
            room.detector.forget(frame["peerId"])
        elif frame is not None and kind == "mode":
            room.mode = "sfu" if frame["mode"] == "sfu" else "mesh"
        op = envelope.get("op")
        if op == "pref" and (found := room.remote.get(envelope["peerId"])) is not None:
            found.pref = envelope["pref"]
        elif op == "call-ended":  # the AI peer of a call counted here left through another
            await self.end_call(self._call_ids.get(str(envelope.get("callId"))))
        elif op is not None and self.remote_op is not None:
            await self.remote_op(room, envelope)
        if frame is None:
            return
        if (to := envelope.get("to")) is not None:
            if (target := room.peers.get(to)) is not None:
                await target.send(frame)
            return
        for peer in list(room.peers.values()):
            if peer.peer_id != envelope.get("skip") and (
                peer.verified or not envelope.get("verified")
            ):
                await peer.send(frame)

    async def _lost(self, reason: str) -> None:
        """Frames may have been missed: every socket of a shared room is closed to rejoin."""
        for room in list(self.rooms.values()):
            for peer in [*room.peers.values(), *room.waiting.values()]:
                await peer.close(FANOUT_LOST, FANOUT_LOST_REASON)


def new_peer_id() -> str:
    return "p_" + secrets.token_hex(6)


# This process's rooms, one hub per runtime.
hub_for = PerRuntime(lambda runtime: Hub(runtime.settings.room_fanout_url))
