"""One peer's socket on ``/signal.ashx?room=<name>``: limits, validation, and dispatch."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
import time
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import ValidationError
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from switchboard.kit.clientip import client_ip, parse_networks
from switchboard.kit.errors import ApiError
from switchboard.platform.rooms import schemas as msg
from switchboard.platform.rooms import service, sfu, vnum
from switchboard.platform.rooms.detector import Report
from switchboard.platform.rooms.fanout import FanoutLost
from switchboard.platform.rooms.hub import (
    FANOUT_LOST,
    FANOUT_LOST_REASON,
    Hub,
    LiveRoom,
    Peer,
    hub_for,
    new_peer_id,
)
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant
from switchboard.web import repository as web_sessions
from switchboard.web.cookies import CONSOLE_COOKIE, CookieJar

log = logging.getLogger("switchboard.rooms")

ROOM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
POLICY = 1008
TOO_BIG = 1009
REASON_MAX = 120  # a close reason is at most 123 bytes
# A peer joining a full room on the SFU publishes, then subscribes to each other peer (offer,
# answer) and again when its feed is announced: the burst a socket starts with, per peer.
REQUEST_BURST_PER_PEER = 4


class Refused(Exception):
    """Close this socket with ``code`` and ``reason``; the room goes on without it."""

    def __init__(self, reason: str, code: int = POLICY) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason.encode()[:REASON_MAX].decode(errors="ignore")


class Socket:
    """The frame limits of one socket: size and rate (``room_max_*`` settings), and the
    bucket of its requests that write an event or reach the bridge (``spend``)."""

    def __init__(self, websocket: WebSocket, runtime: Runtime) -> None:
        self.ws = websocket
        self.max_bytes = runtime.settings.room_max_message_bytes
        self.max_rate = runtime.settings.room_max_messages_per_second
        self._window = 0
        self._count = 0
        self._clock = runtime.clock
        self.request_rate = runtime.settings.room_max_requests_per_second
        self.request_burst = float(REQUEST_BURST_PER_PEER * runtime.settings.room_max_peers)
        self._tokens = self.request_burst
        self._refilled: dt.datetime | None = None

    def spend(self) -> None:
        """One request that writes an event or reaches the bridge: a token of the bucket,
        refilled at ``room_max_requests_per_second`` up to the burst; none left closes the
        socket like the frame rate (docs/decisions/0851-signaling-frames-that-cost.md)."""
        now = self._clock.now()
        if self._refilled is not None:
            elapsed = max((now - self._refilled).total_seconds(), 0.0)
            self._tokens = min(self.request_burst, self._tokens + elapsed * self.request_rate)
        self._refilled = now
        if self._tokens < 1:
            raise Refused(
                f"more than {self.request_rate:g} preference, admit or sfu-* requests per second"
            )
        self._tokens -= 1

    async def send(self, message: dict[str, Any]) -> None:
        if self.ws.application_state != WebSocketState.CONNECTED:
            return
        try:
            await self.ws.send_text(orjson.dumps(message).decode())
        except (RuntimeError, WebSocketDisconnect, OSError):
            log.debug("send to a closing socket dropped")

    async def close(self, code: int, reason: str) -> None:
        await _close(self.ws, code, reason)

    async def receive(self) -> msg.Message:
        frame = await self.ws.receive()
        if frame["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(frame.get("code", 1000))
        text = frame.get("text")
        if text is None:
            raise Refused("binary frames are not accepted; send JSON text")
        if len(text.encode()) > self.max_bytes:
            raise Refused(f"message above {self.max_bytes} bytes", TOO_BIG)
        second = int(time.monotonic())
        if second != self._window:
            self._window, self._count = second, 0
        self._count += 1
        if self._count > self.max_rate:
            raise Refused(f"more than {self.max_rate} messages per second")
        try:
            return msg.MESSAGE.validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "message"
            raise Refused(f"invalid message: {where}: {first['msg']}") from None


async def _receive_join(socket: Socket, runtime: Runtime) -> msg.Join:
    """The first frame, a ``join``, within ``room_join_timeout``: a socket that says nothing
    holds no connection for ever."""
    seconds = runtime.settings.room_join_timeout
    try:
        async with asyncio.timeout(seconds):
            first = await socket.receive()
    except TimeoutError:
        raise Refused(f"no join within {seconds:g} seconds") from None
    if not isinstance(first, msg.Join):
        raise Refused("the first message must be a join")
    return first


def _check_role(join: msg.Join, *, verified: bool, join_token: bool) -> None:
    """A role other than ``human`` is the platform's own: ``ai-vnum`` is the AI peer of a call
    (its join token, and that token for nothing else), ``sip-bridge`` a leg joined with a
    bearer of the tenant. Anybody else would pose as them to the room and its webhooks."""
    if join_token and join.role != "ai-vnum":
        raise Refused("a join token joins as role ai-vnum only")
    if join.role == "ai-vnum" and not join_token:
        raise Refused("role ai-vnum joins with the join token of a call")
    if join.role == "sip-bridge" and not verified:
        raise Refused("role sip-bridge needs a bearer of the tenant")


async def _identity(
    runtime: Runtime, websocket: WebSocket, tenant: Tenant, room: str, join: msg.Join
) -> tuple[bool, bool, str]:
    """(verified, admin, call id): a bearer of the tenant, or a console session cookie of
    it, or the join token of a call's AI peer; the role checked against them
    (``_check_role``)."""
    token = join.token or websocket.query_params.get("access_token")
    if token and token.startswith(vnum.TOKEN_PREFIX):  # the AI peer of a call to a number
        grant = vnum.verify_join_token(runtime, token)
        if grant is None or grant.tenant_id != tenant.id or grant.room != room:
            raise Refused("the join token is not valid for this room")
        _check_role(join, verified=True, join_token=True)
        return True, False, grant.call_id
    verified, admin = await _bearer_or_cookie(runtime, websocket, tenant, token)
    _check_role(join, verified=verified, join_token=False)
    return verified, admin, ""


async def _bearer_or_cookie(
    runtime: Runtime, websocket: WebSocket, tenant: Tenant, token: str | None
) -> tuple[bool, bool]:
    host = websocket.headers.get("host", "")
    if token:  # what the check needs from the network, outside any transaction (0029)
        await runtime.authenticator.prepare(host, token)
    async with runtime.db.transaction(read_only=True) as session:
        if token:
            try:
                caller = await runtime.authenticator.authenticate(session, token, host=host)
            except ApiError:
                raise Refused("the token is not valid") from None
            if caller.tenant_id != tenant.id:
                raise Refused("the token belongs to another tenant")
            return True, caller.is_admin
        jar = CookieJar(
            runtime.settings.secret_key, name=CONSOLE_COOKIE, path="/admin", secure=False
        )
        now = int(runtime.clock.timestamp())
        found = jar.session(websocket.cookies.get(CONSOLE_COOKIE), now=now)
        if found is not None:
            user = await web_sessions.session_user(session, found, now=runtime.clock.now())
            if user is not None and user.tenant_id == tenant.id:
                return True, user.role == "admin"
    return False, False


async def serve(websocket: WebSocket, runtime: Runtime) -> None:
    await websocket.accept()
    ip = client_ip(
        websocket.client.host if websocket.client else None,
        websocket.headers.get("x-forwarded-for"),
        parse_networks(runtime.settings.trusted_proxies),
    )
    hub = _hub(runtime)
    most = runtime.settings.room_max_sockets_per_ip
    if not hub.hold_address(ip, most):
        log.info("signaling socket refused: %s holds %d sockets", ip, most)
        await _close(websocket, POLICY, f"more than {most} signaling sockets from this address")
        return
    try:
        await _serve(websocket, runtime, hub, ip)
    finally:
        hub.drop_address(ip)


async def _serve(websocket: WebSocket, runtime: Runtime, hub: Hub, ip: str) -> None:
    socket = Socket(websocket, runtime)
    room: LiveRoom | None = None
    peer: Peer | None = None
    call_id = ""  # an AI peer's: its call ends with this socket
    try:
        name = websocket.query_params.get("room", "")
        if not ROOM_NAME.match(name):
            raise Refused("room: 1 to 64 letters, digits, '.', '_' or '-'")
        async with runtime.db.transaction(read_only=True) as session:
            tenant = await tenants.resolve_host(session, websocket.headers.get("host", ""))
        if tenant is None:
            raise Refused("no tenant serves this host")
        first = await _receive_join(socket, runtime)
        verified, admin, call_id = await _identity(runtime, websocket, tenant, name, first)
        room = hub.room(tenant.id, tenant.name, name)
        await hub.listen(room)
        peer = Peer(new_peer_id(), first.name, first.role, verified, admin, ip, first.pref,
                    socket.send, close=socket.close)  # fmt: skip
        async with service.locked(runtime, room):
            if room.fanout is None and not room.peers and not room.waiting:
                await service.load(runtime, room)
            if room.lobby and not verified:  # the lobby has a bound of its own (decision 0853)
                most = runtime.settings.room_max_waiting
                if not await room.enter_lobby(peer, most):
                    peer = None
                    raise Refused(f"the lobby is full ({most} waiting)")
                await socket.send({"type": "waiting", "peerId": peer.peer_id})
                knock = {"type": "knock", "peerId": peer.peer_id, "name": peer.name}
                await room.broadcast(knock, verified_only=True)
            elif full := _full(runtime, room):
                peer = None
                raise Refused(full)
            else:
                await service.admit(runtime, room, peer, join_path="direct")
        if first.call and peer.peer_id in room.peers:
            scheme = "wss" if websocket.url.scheme in ("wss", "https") else "ws"
            host = websocket.headers.get("host", "")
            await vnum.call(runtime, room, peer, first.call, signal_base=f"{scheme}://{host}")
        while True:
            message = await socket.receive()
            if isinstance(message, msg.Leave):
                break
            await _dispatch(runtime, room, peer, message, socket.spend)
    except WebSocketDisconnect:
        pass
    except Refused as exc:
        log.info("signaling socket closed: %s", exc.reason)
        await _close(websocket, exc.code, exc.reason)
    except FanoutLost as exc:  # the room cannot be served now: the client rejoins
        log.error("room %s: %s", room.name if room else "-", exc)
        await _close(websocket, FANOUT_LOST, FANOUT_LOST_REASON)
    finally:
        # An AI call counts no more once its AI peer's socket or its caller's socket ends.
        await hub.ai_peer_left(call_id, room)
        if peer is not None:
            await hub.end_call(peer.call)
        if room is not None:
            if peer is not None:
                async with service.locked(runtime, room, required=False):
                    await service.leave(runtime, room, peer)
            await hub.release(room)
    await _close(websocket, 1000, "left")


def _hub(runtime: Runtime) -> Hub:
    hub = hub_for(runtime)
    if hub.fanout is not None and hub.remote_op is None:

        async def remote_op(room: LiveRoom, envelope: dict[str, Any]) -> None:
            await _remote_op(runtime, room, envelope)

        hub.remote_op = remote_op
    return hub


async def _remote_op(runtime: Runtime, room: LiveRoom, envelope: dict[str, Any]) -> None:
    """An operation another process asked of this room: the detector's news (``stress``,
    ``degraded``), or admitting a peer waiting here (``admit``)."""
    op = str(envelope.get("op"))
    if op in ("stress", "degraded"):
        service.remote_stress(room, op, envelope)
    elif op == "admit" and envelope.get("peerId") in room.waiting:
        by = str(envelope.get("by", ""))
        hub_for(runtime).spawn(_admit_here(runtime, room, str(envelope["peerId"]), by))


def _full(runtime: Runtime, room: LiveRoom) -> str:
    """Why a peer finds no place among the admitted ones, or "". Peers waiting in the lobby
    do not count: they never keep out a peer who may enter (docs/decisions/0853)."""
    most = runtime.settings.room_max_peers
    return f"the room is full ({most} peers)" if room.peer_count >= most else ""


async def _admit_here(runtime: Runtime, room: LiveRoom, waiting_id: str, by: str) -> None:
    try:
        async with service.locked(runtime, room):
            if (full := _full(runtime, room)) and waiting_id in room.waiting:
                await room.send_to(by, _room_full(full))
                return
            waiting = await room.leave_lobby(waiting_id)
            if waiting is not None:
                await service.admit(runtime, room, waiting, join_path="admit")
    except FanoutLost as exc:
        log.error("room %s: admit from another process failed: %s", room.name, exc)


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    if websocket.application_state != WebSocketState.CONNECTED:
        return
    try:
        await websocket.close(code, reason)
    except (RuntimeError, WebSocketDisconnect, OSError):
        log.debug("the peer was gone before the close")


async def _dispatch(
    runtime: Runtime, room: LiveRoom, peer: Peer, message: msg.Message, spend: Callable[[], None]
) -> None:
    """``spend``: called before a request that writes an event or reaches the bridge (a
    changed preference, an admit, an SFU request while the room is on the SFU)."""
    if peer.peer_id in room.waiting:
        raise Refused("waiting in the lobby: only leave is accepted until admitted")
    if isinstance(message, msg.Join):
        raise Refused("already joined")
    if isinstance(message, msg.Relay | msg.Candidate):
        if not room.has(message.to):
            await peer.send({"type": "error", "code": "unknown_peer",
                             "message": f"no peer {message.to} in the room"})  # fmt: skip
            return
        relayed = message.model_dump(mode="json", by_alias=True, exclude={"to"})
        await room.send_to(message.to, {**relayed, "from": peer.peer_id})
    elif isinstance(message, msg.Admit):
        spend()
        await _admit(runtime, room, peer, message.peer_id)
    elif isinstance(message, msg.Stats):
        report = Report(message.abr_mbps, message.loss_pct, message.packets_sent, message.rtt_ms)
        async with room.lock:
            wanted = await service.stats(runtime, room, peer, report)
            if wanted is not None and room.fanout is None:
                await service.promote(runtime, room, trigger=wanted.trigger,
                                      reason=wanted.reason, extra=wanted.extra)  # fmt: skip
        if wanted is not None and room.fanout is not None:
            async with service.locked(runtime, room):  # every process's lock; the mode read anew
                if room.mode == "mesh":
                    await service.promote(runtime, room, trigger=wanted.trigger,
                                          reason=wanted.reason, extra=wanted.extra)  # fmt: skip
    elif isinstance(message, msg.Preference):
        if message.pref != peer.pref:  # the same vote again changes nothing: nothing written
            spend()
            await service.preference(runtime, room, peer, message.pref)
    else:
        if room.mode == "sfu":  # in mesh, ``sfu.handle`` answers without the bridge
            spend()
        await sfu.handle(runtime, room, peer, message)


async def _admit(runtime: Runtime, room: LiveRoom, peer: Peer, waiting_id: str) -> None:
    if not (peer.verified or peer.admin):
        await peer.send({"type": "error", "code": "forbidden",
                         "message": "only verified peers and admins admit"})  # fmt: skip
        return
    if waiting_id not in room.waiting and room.fanout is not None:
        await room.tell("admit", peerId=waiting_id, by=peer.peer_id)  # waiting elsewhere, maybe
        return
    async with service.locked(runtime, room):
        if waiting_id not in room.waiting:
            await peer.send({"type": "error", "code": "unknown_peer",
                             "message": f"no peer {waiting_id} is waiting"})  # fmt: skip
            return
        if full := _full(runtime, room):  # the peer waits on
            await peer.send(_room_full(full))
            return
        admitted = await room.leave_lobby(waiting_id)
        if admitted is not None:
            await service.admit(runtime, room, admitted, join_path="admit")


def _room_full(reason: str) -> dict[str, Any]:
    return {"type": "error", "code": "room_full", "message": f"{reason}: admit once one leaves"}
