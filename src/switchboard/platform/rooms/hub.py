"""The live rooms of this process: who is in which room, through which socket."""

from __future__ import annotations

import asyncio
import secrets
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from switchboard.platform.rooms.detector import Detector
from switchboard.platform.rooms.schemas import Mode, Pref, Role

if TYPE_CHECKING:
    from switchboard.runtime import Runtime

Send = Callable[[dict[str, Any]], Awaitable[None]]


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
    peers: dict[str, Peer] = field(default_factory=dict)
    waiting: dict[str, Peer] = field(default_factory=dict)
    detector: Detector = field(default_factory=Detector)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def human_count(self) -> int:
        return sum(1 for p in self.peers.values() if p.role == "human")

    def others(self, peer_id: str) -> list[Peer]:
        return [p for p in self.peers.values() if p.peer_id != peer_id]

    async def broadcast(self, message: dict[str, Any], *, skip: str = "") -> None:
        for peer in list(self.peers.values()):
            if peer.peer_id != skip:
                await peer.send(message)


class Hub:
    def __init__(self) -> None:
        self.rooms: dict[tuple[int, str], LiveRoom] = {}

    def room(self, tenant_id: int, tenant_name: str, name: str) -> LiveRoom:
        key = (tenant_id, name)
        found = self.rooms.get(key)
        if found is None:
            found = self.rooms[key] = LiveRoom(tenant_id, tenant_name, name)
        return found

    def find(self, tenant_id: int, name: str) -> LiveRoom | None:
        return self.rooms.get((tenant_id, name))

    def drop_if_empty(self, room: LiveRoom) -> None:
        if not room.peers and not room.waiting:
            self.rooms.pop((room.tenant_id, room.name), None)


def new_peer_id() -> str:
    return "p_" + secrets.token_hex(6)


_hubs: weakref.WeakKeyDictionary[Runtime, Hub] = weakref.WeakKeyDictionary()


def hub_for(runtime: Runtime) -> Hub:
    hub = _hubs.get(runtime)
    if hub is None:
        hub = _hubs[runtime] = Hub()
    return hub
