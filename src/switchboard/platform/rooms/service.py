"""The rules of a room: presence, relaying, the detector, preferences and the cascade.

Every change that others must learn of is written as an event in its own transaction (the
outbox, ``webhooks.outbox.emit``), together with the room row's counts and mode. When rooms fan
out across ``serve`` processes, the same transaction writes the peer's ``room_peers`` row, and
``locked`` serialises the room across processes and reads its state anew (decision 0841).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.bridge import protocol
from switchboard.kit.errors import ApiError
from switchboard.platform.bridging.client import RoomAnswer, bridge_for
from switchboard.platform.events import catalogue as ev
from switchboard.platform.rooms import repository
from switchboard.platform.rooms.detector import Report, Tunables
from switchboard.platform.rooms.fanout import FanoutLost
from switchboard.platform.rooms.hub import LiveRoom, Member, Peer
from switchboard.platform.rooms.models import Room, RoomPeer
from switchboard.platform.rooms.schemas import Mode, Pref, Role
from switchboard.platform.webhooks.outbox import emit
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from switchboard.tenants.config import SFU_TUNABLES, TenantConfig
from switchboard.tenants.models import Tenant

log = logging.getLogger("switchboard.rooms")

ERROR_MAX = 200
PREFS: tuple[Pref, ...] = ("auto", "prefer-mesh", "prefer-sfu")
ROLES: tuple[Role, ...] = ("human", "ai-vnum", "sip-bridge")


def _role(value: str) -> Role:
    return next((role for role in ROLES if role == value), "human")


def _pref(value: str) -> Pref:
    return next((pref for pref in PREFS if pref == value), "auto")


async def _sfu_tunables(runtime: Runtime, room: LiveRoom) -> dict[str, float]:
    """The tenant's ``Phone:Sfu:*`` values, clamped: read again whenever the database may have
    changed since the room last read them (``Changes.version``), so a change applies to the
    next join or report (hot reload) while a stream of ``stats`` frames reads nothing."""
    version = runtime.db.changes.version()  # before the read: a write after it is a change
    if version is not None and room.tunables is not None and room.tunables[0] == version:
        return room.tunables[1]
    async with runtime.db.transaction(read_only=True) as session:
        tenant = await session.get(Tenant, room.tenant_id)
    sfu = TenantConfig.from_settings(tenant.settings if tenant else None).sfu
    room.tunables = None if version is None else (version, sfu)
    return sfu


async def record(
    runtime: Runtime, room: LiveRoom, events: list[tuple[str, dict[str, Any]]], *,
    joined: Peer | None = None, left: Peer | None = None, pref: Peer | None = None,
    mode_changed: bool = False,
) -> None:  # fmt: skip
    """Write ``events`` and the room's current counts and mode in one transaction; with the
    fan-out, the membership change too (``joined``, ``left``, ``pref``), the counts over every
    process, and the mode only when it changed (another process may have changed it)."""
    async with runtime.db.transaction() as session:
        row = await repository.get_or_create(
            session, tenant_id=room.tenant_id, name=room.name, now=runtime.clock.now()
        )
        if room.fanout is None:
            row.mode, row.peer_count, row.human_count = room.mode, len(room.peers), room.human_count
        else:
            await _write_members(session, row, joined=joined, left=left, pref=pref,
                                 node=room.fanout.node, now=runtime.clock.now())  # fmt: skip
            row.peer_count, row.human_count = await repository.counts(session, room=row)
            if mode_changed:
                row.mode = room.mode
        row.updated_at = runtime.clock.now()
        for name, data in events:
            await emit(
                session, tenant_id=room.tenant_id, tenant_name=room.tenant_name, event=name,
                data=data, clock=runtime.clock,
            )  # fmt: skip


async def _write_members(
    session: AsyncSession, row: Room, *, joined: Peer | None, left: Peer | None,
    pref: Peer | None, node: str, now: dt.datetime,
) -> None:  # fmt: skip
    if joined is not None:
        member = RoomPeer(
            peer_id=joined.peer_id, name=joined.name, role=joined.role,
            verified=joined.verified, pref=joined.pref, node=node,
            joined_at=now,
        )  # fmt: skip
        await repository.add_member(session, room=row, member=member)
    if left is not None:
        await repository.remove_members(session, room=row, peer_ids=[left.peer_id])
    if pref is not None:
        await repository.set_pref(session, room=row, peer_id=pref.peer_id, pref=pref.pref)


@contextlib.asynccontextmanager
async def locked(runtime: Runtime, room: LiveRoom, *, required: bool = True) -> AsyncIterator[None]:
    """The room's lock. With the fan-out, also every process's lock of it (Redis), under which
    the room's mode, lobby and the peers of other processes are read anew. ``required``
    false (a leave): when Redis is out of reach, go on under this process's lock alone."""
    async with room.lock:
        if room.fanout is None:
            yield
            return
        try:
            held = await room.fanout.acquire(room.channel)
        except FanoutLost:
            if required:
                raise
            held = None
        try:
            await load(runtime, room)
            yield
        finally:
            if held is not None:
                await room.fanout.release(held)


async def load(runtime: Runtime, room: LiveRoom) -> None:
    """A room coming alive in this process takes its mode and lobby from its row; with the
    fan-out, also the peers of the other processes still beating (rows of stopped ones are
    dropped, with a ``peer-left`` to the room)."""
    async with runtime.db.transaction() as session:
        row = await repository.get_or_create(
            session, tenant_id=room.tenant_id, name=room.name, now=runtime.clock.now()
        )
        room.mode, room.lobby = "sfu" if row.mode == "sfu" else "mesh", row.lobby
        if room.fanout is None:
            return
        others = [m for m in await repository.members(session, room=row)
                  if m.node != room.fanout.node]  # fmt: skip
        alive = await room.fanout.alive(m.node for m in others)
        gone = [m.peer_id for m in others if m.node not in alive]
        if gone:  # their process stopped beating without its peers leaving
            log.warning("room %s: dropping %d peers of a stopped process", room.name, len(gone))
            await repository.remove_members(session, room=row, peer_ids=gone)
            row.peer_count, row.human_count = await repository.counts(session, room=row)
    room.remote = {
        m.peer_id: Member(m.peer_id, m.name, _role(m.role), m.verified, _pref(m.pref), m.node)
        for m in others if m.node in alive
    }  # fmt: skip
    for peer_id in gone:
        room.detector.forget(peer_id)
        await room.broadcast({"type": "peer-left", "peerId": peer_id})


# --- presence ----------------------------------------------------------------------------


def vote_tally(room: LiveRoom) -> dict[str, int]:
    tally: dict[str, int] = dict.fromkeys(PREFS, 0)
    for peer in room.members():
        if peer.role == "human":
            tally[peer.pref] += 1
    return tally


def effective_threshold(base: int, tally: dict[str, int]) -> int:
    """``AutoPromoteHumanCount`` shifted by one per net vote (docs/decisions/0800): each
    ``prefer-mesh`` human raises it, each ``prefer-sfu`` human lowers it, within 2..100."""
    tunable = SFU_TUNABLES["AutoPromoteHumanCount"]
    shifted = base + tally["prefer-mesh"] - tally["prefer-sfu"]
    return int(min(max(shifted, tunable.low), tunable.high))


async def admit(runtime: Runtime, room: LiveRoom, peer: Peer, *, join_path: str) -> None:
    """``peer`` enters the room: welcome, presence to the others, the join-time promote."""
    humans_before = room.human_count
    peer.join_path = join_path
    room.peers[peer.peer_id] = peer
    await record(runtime, room, [(ev.ROOM_PEER_JOINED, {
        "room": room.name, "peerId": peer.peer_id, "name": peer.name, "role": peer.role,
        "verified": peer.verified, "ip": peer.ip, "joinPath": join_path,
        "peerCount": room.peer_count,
    })], joined=peer)  # fmt: skip
    await peer.send({
        "type": "welcome", "peerId": peer.peer_id, "room": room.name, "mode": room.mode,
        "peers": [p.public() for p in room.others(peer.peer_id)],
        "iceServers": ice_servers(runtime, peer.peer_id),
    })  # fmt: skip
    member = {**peer.public(), "pref": peer.pref}
    await room.broadcast({"type": "peer-joined", "peer": peer.public()}, skip=peer.peer_id,
                         extra={"member": member})  # fmt: skip
    if room.mode == "mesh" and peer.role == "human":
        sfu = await _sfu_tunables(runtime, room)
        threshold = effective_threshold(int(sfu["AutoPromoteHumanCount"]), vote_tally(room))
        if humans_before >= threshold:
            humans = room.human_count
            await promote(
                runtime, room, trigger="auto-join",
                reason=f"auto-promote-join-human-count-{humans}", extra={"humanCount": humans},
            )  # fmt: skip


async def leave(runtime: Runtime, room: LiveRoom, peer: Peer) -> None:
    if await room.leave_lobby(peer.peer_id) is not None:
        return
    if room.peers.pop(peer.peer_id, None) is None:
        return
    room.detector.forget(peer.peer_id)
    await record(runtime, room, [(ev.ROOM_PEER_LEFT, {
        "room": room.name, "peerId": peer.peer_id, "name": peer.name, "role": peer.role,
        "verified": peer.verified, "ip": peer.ip, "reason": "ws-close",
        "peerCount": room.peer_count,
    })], left=peer)  # fmt: skip
    await room.broadcast({"type": "peer-left", "peerId": peer.peer_id})
    if room.mode == "sfu":
        message = protocol.RoomLeave(tenant=room.tenant_name, room=room.name, peer_id=peer.peer_id)
        await bridge_room(runtime, protocol.ROOM_LEAVE_PATH, message, phase="leave")


def ice_servers(runtime: Runtime, peer_id: str) -> list[dict[str, Any]]:
    """TURN credentials of the relay when it is configured, else none (host candidates)."""
    from switchboard.relay.credentials import ice_servers as relay_ice_servers

    settings = runtime.settings
    if not settings.room_turn_urls or not settings.room_turn_secret:
        return []
    servers = relay_ice_servers(
        urls=settings.room_turn_urls, secret=settings.room_turn_secret, label=peer_id,
        clock=runtime.clock,
    )  # fmt: skip
    return [dict(server) for server in servers]


# --- the detector and preferences -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Promotion:
    """A promote the detector asks for: taken under the room's lock, if still in mesh."""

    trigger: str
    reason: str
    extra: dict[str, Any]


async def stats(runtime: Runtime, room: LiveRoom, peer: Peer, report: Report) -> Promotion | None:
    if peer.role != "human":  # the detector counts stressed humans (spec 8.1)
        return None
    sfu = await _sfu_tunables(runtime, room)
    tunables, now = Tunables.of(sfu), runtime.clock.now()
    was_stressed = room.detector.is_stressed(peer.peer_id)
    found = room.detector.evaluate(peer_id=peer.peer_id, report=report, now=now, tunables=tunables)
    stressed = room.detector.is_stressed(peer.peer_id)
    if room.fanout is not None and (was_stressed or stressed):  # news for the other processes
        wire = [report.abr_mbps, report.loss_pct, report.packets_sent, report.rtt_ms]
        await room.tell("stress", peerId=peer.peer_id, at=now.isoformat(),
                        report=wire if stressed else None)  # fmt: skip
    if found is None:
        return None
    await room.tell("degraded", at=now.isoformat())
    humans, peers = room.human_count, room.peer_count
    await record(runtime, room, [(ev.ROOM_BANDWIDTH_DEGRADED, {
        "room": room.name, "stressedCount": found.stressed_count, "peerCount": peers,
        "humanCount": humans, "windowSec": found.window_sec,
        "triggerPeerId": found.trigger_peer_id,
        "sampleMetrics": {"abrMbps": found.abr_mbps, "lossPct": found.loss_pct,
                          "rttMs": found.rtt_ms},
    })])  # fmt: skip
    if room.mode != "mesh" or humans < int(sfu["AutoPromoteBwMinHumans"]):
        return None
    return Promotion(
        trigger="auto-bandwidth",
        reason=f"auto-promote-bandwidth-degraded-stressed-{found.stressed_count}-of-{peers}",
        extra={"humanCount": humans, "stressedCount": found.stressed_count, "peerCount": peers},
    )


def remote_stress(room: LiveRoom, op: str, data: dict[str, Any]) -> None:
    """The detector's news from another process (``stats``): a peer's stress, a firing."""
    at = dt.datetime.fromisoformat(str(data["at"]))
    if op == "degraded":
        room.detector.fired(at)
        return
    wire = data.get("report")
    report = Report(float(wire[0]), float(wire[1]), int(wire[2]), float(wire[3])) if wire else None
    room.detector.note(peer_id=str(data["peerId"]), report=report, at=at)


async def preference(runtime: Runtime, room: LiveRoom, peer: Peer, pref: Pref) -> None:
    previous, peer.pref = peer.pref, pref
    tally = vote_tally(room)
    sfu = await _sfu_tunables(runtime, room)
    await record(runtime, room, [(ev.ROOM_CLIENT_PREFERENCE_CHANGED, {
        "room": room.name, "peerId": peer.peer_id, "role": peer.role, "prevPref": previous,
        "newPref": pref, "voteTally": tally,
        "effectiveThreshold": effective_threshold(int(sfu["AutoPromoteHumanCount"]), tally),
    })], pref=peer)  # fmt: skip
    await room.tell("pref", peerId=peer.peer_id, pref=pref)


# --- the cascade ------------------------------------------------------------------------------


async def bridge_room(
    runtime: Runtime, path: str, message: protocol.RoomRef, *, phase: str
) -> RoomAnswer:
    try:
        bridge = bridge_for(runtime)
    except ApiError as exc:
        return RoomAnswer(0, code=exc.code, phase=phase, error=exc.description)
    return await bridge.room(path, message, phase=phase)


def failure_text(answer: RoomAnswer) -> str:
    text = answer.error or answer.code or f"HTTP {answer.http_status}"
    if answer.http_status:
        text = f"HTTP {answer.http_status} {answer.code}: {text}"
    return text[:ERROR_MAX]


async def promote(
    runtime: Runtime, room: LiveRoom, *, trigger: str, reason: str,
    extra: dict[str, Any] | None = None, actor: str = "",
) -> RoomAnswer:  # fmt: skip
    """mesh → sfu through the bridge; on failure the mode stays and nobody migrates."""
    peers = [p.peer_id for p in room.members()]
    message = protocol.RoomPromote(tenant=room.tenant_name, room=room.name, peers=peers)
    answer = await bridge_room(runtime, protocol.ROOM_PROMOTE_PATH, message, phase="promote")
    return await _apply(runtime, room, "sfu", answer, trigger, reason, extra or {}, actor)


async def demote(runtime: Runtime, room: LiveRoom, *, reason: str, actor: str) -> RoomAnswer:
    message = protocol.RoomDemote(tenant=room.tenant_name, room=room.name)
    answer = await bridge_room(runtime, protocol.ROOM_DEMOTE_PATH, message, phase="demote")
    return await _apply(runtime, room, "mesh", answer, "admin", reason, {}, actor)


async def _apply(
    runtime: Runtime, room: LiveRoom, mode: Mode, answer: RoomAnswer, trigger: str,
    reason: str, extra: dict[str, Any], actor: str,
) -> RoomAnswer:  # fmt: skip
    data: dict[str, Any] = {"room": room.name, "mode": mode, "reason": reason, "trigger": trigger}
    if not answer.ok:
        if trigger == "auto-join":
            data["humanCount"] = extra.get("humanCount", room.human_count)
        if actor:
            data["actor"] = actor
        data["error"] = failure_text(answer)
        log.warning("room %s: %s to %s failed: %s", room.name, trigger, mode, data["error"])
        await record(runtime, room, [(ev.ROOM_CASCADE_FAILED, data)])
        return answer
    room.mode = mode
    data.update(extra)
    if actor:
        data["actor"] = actor
    name = ev.ROOM_CASCADE_PROMOTED if mode == "sfu" else ev.ROOM_CASCADE_DEMOTED
    await record(runtime, room, [(name, data)], mode_changed=True)
    await room.broadcast({"type": "mode", "mode": mode, "reason": reason})
    return answer


async def bridge_connected(
    session: AsyncSession, *, runtime: Runtime, event: protocol.RoomCallback
) -> None:
    """The bridge's ``room-events`` callback, as an event of the room's tenant, and news for
    the room's peers: ``publisher-added`` to the others once a publisher's feed is up (others
    may subscribe to it from then on), ``subscriber-connected`` to a publisher once a peer
    receives it through the SFU (the mesh edge between them may then close)."""
    from switchboard.platform.rooms.hub import hub_for

    tenant = await tenants.require_by_name(session, event.tenant)
    hub = hub_for(runtime)
    live = hub.find(tenant.id, event.room)
    if live is None and hub.fanout is not None:  # the room's peers may be in other processes
        live = hub.detached(tenant.id, tenant.name, event.room)
    if event.type == "publisher-connected":
        members = {p.peer_id: p for p in live.members()} if live is not None else {}
        peer = members.get(event.peer_id)
        name, data = ev.SFU_PUBLISHER_CONNECTED, {
            "room": event.room, "peerId": event.peer_id,
            "role": peer.role if peer is not None else "human",
            "connectedUtc": event.connected_utc, "packetsAtConn": event.packets_at_conn,
        }  # fmt: skip
    else:
        name, data = ev.SFU_SUBSCRIBER_CONNECTED, {
            "room": event.room, "publisherPeerId": event.publisher_peer_id,
            "subscriberPeerId": event.subscriber_peer_id, "connectedUtc": event.connected_utc,
            "packetsForwardedAtConn": event.packets_forwarded_at_conn,
        }  # fmt: skip
    await emit(session, tenant_id=tenant.id, tenant_name=tenant.name, event=name, data=data,
               clock=runtime.clock)  # fmt: skip
    if live is None:
        return
    if event.type == "publisher-connected":
        await live.broadcast({"type": "publisher-added", "peerId": event.peer_id},
                             skip=event.peer_id)  # fmt: skip
    else:
        connected = {"type": "subscriber-connected", "peerId": event.subscriber_peer_id}
        await live.send_to(event.publisher_peer_id, connected)
