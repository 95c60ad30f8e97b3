"""A browser's call to a virtual number: the ``call`` of a ``join`` names the number, and the
bridge's AI peer (``POST /v1/rooms/ai-peer``) joins the room with a short-lived join token.

The bridge reports the call with the inbound callbacks (``inbound-ai-started``,
``inbound-ended``, source ``vnum``, ``room``), which become ``call.started``, ``call.ended`` and
``transcript.saved`` like any virtual-number call.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

import orjson

from switchboard.bridge import protocol
from switchboard.kit.errors import ApiError
from switchboard.platform.bridging.client import RoomAnswer, bridge_for
from switchboard.platform.numbers import service as numbers
from switchboard.platform.numbers.models import SIGNED_IN
from switchboard.platform.rooms import service
from switchboard.platform.rooms.hub import LiveRoom, Peer, hub_for
from switchboard.runtime import Runtime
from switchboard.tenants.config import TenantConfig
from switchboard.tenants.models import Tenant

TOKEN_PREFIX = "rjt."  # noqa: S105 (a prefix, not a secret)
TOKEN_TTL_SEC = 60


@dataclass(frozen=True)
class JoinGrant:
    tenant_id: int
    room: str
    call_id: str


def _key(secret_key: str) -> bytes:
    return hashlib.sha256(f"room-join-token:{secret_key}".encode()).digest()


def join_token(runtime: Runtime, grant: JoinGrant) -> str:
    """``rjt.<payload>.<hmac>``: this tenant's room, this call, for ``TOKEN_TTL_SEC``."""
    expires = int(runtime.clock.timestamp()) + TOKEN_TTL_SEC
    payload = orjson.dumps({"t": grant.tenant_id, "r": grant.room, "c": grant.call_id,
                            "e": expires})  # fmt: skip
    body = base64.urlsafe_b64encode(payload).decode().rstrip("=")
    mac = hmac.new(_key(runtime.settings.secret_key), body.encode(), "sha256").hexdigest()
    return f"{TOKEN_PREFIX}{body}.{mac}"


def verify_join_token(runtime: Runtime, token: str) -> JoinGrant | None:
    """The grant of a genuine, unexpired join token, else None."""
    body, _, mac = token.removeprefix(TOKEN_PREFIX).partition(".")
    expected = hmac.new(_key(runtime.settings.secret_key), body.encode(), "sha256").hexdigest()
    if not hmac.compare_digest(mac, expected):
        return None
    try:
        payload = orjson.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        grant = JoinGrant(int(payload["t"]), str(payload["r"]), str(payload["c"]))
        expires = int(payload["e"])
    except (ValueError, KeyError, TypeError):
        return None
    if expires < runtime.clock.timestamp():
        return None
    return grant


async def call(
    runtime: Runtime, room: LiveRoom, peer: Peer, number: str, *, signal_base: str
) -> RoomAnswer | None:
    """Ask the bridge for the number's AI peer in ``room``; an ``error`` to ``peer`` when the
    number is unknown, takes signed-in callers only and ``peer`` is not verified (joined with
    the tenant's bearer), has ``room_max_calls_per_number`` calls already or ``peer``'s address
    ``room_max_calls_per_ip`` (``too_many_calls``: no AI peer, the number's key unused; counted
    over every process with the fan-out, ``FanoutLost`` when Redis cannot count them), or the
    bridge refuses. ``signal_base``: ``ws(s)://<host>`` the peer used."""
    hub, settings = hub_for(runtime), runtime.settings
    async with runtime.db.transaction(read_only=True) as session:
        tenant = await session.get(Tenant, room.tenant_id)
        found = await numbers.find_number(session, tenant_id=room.tenant_id, number=number)
        if tenant is None or found is None:
            await peer.send({"type": "error", "code": "unknown_number",
                             "message": f"no virtual number {number}"})  # fmt: skip
            return None
        if found.visibility == SIGNED_IN and not peer.verified:
            await peer.send({"type": "error", "code": "forbidden",
                             "message": f"{number} takes signed-in callers only"})  # fmt: skip
            return None
        held = await hub.hold_call(
            (room.tenant_id, found.number), peer.ip,
            per_number=settings.room_max_calls_per_number, per_ip=settings.room_max_calls_per_ip,
        )  # fmt: skip
        if isinstance(held, str):
            await peer.send({"type": "error", "code": "too_many_calls", "message": held})
            return None
        peer.call = held  # counted until the caller or the AI peer leaves
        api_key, system_prompt = numbers.reveal_secrets(found, runtime.box)
        model = TenantConfig.from_settings(tenant.settings).default_model
    call_id = protocol.inbound_call_id()
    hub.bind_call(held, call_id)
    token = join_token(runtime, JoinGrant(room.tenant_id, room.name, call_id))
    request = protocol.AiPeerRequest(
        tenant=room.tenant_name, room=room.name, call_id=call_id,
        signal_url=f"{signal_base}/signal.ashx?room={room.name}", join_token=token,
        callback_url=runtime.settings.public_base_url + protocol.CALLBACK_PATH,
        number=found.number, name=found.name, voice=found.voice, language=found.language,
        model=model, max_seconds=found.max_duration_sec, system_prompt=system_prompt,
        api_key=api_key,
    )  # fmt: skip
    try:
        answer = await bridge_for(runtime).ai_peer(request)
    except ApiError as exc:  # no bridge configured
        answer = RoomAnswer(0, code=exc.code, phase="ai-peer", error=exc.description)
    if not answer.ok:
        await hub.end_call(held)
        await peer.send({"type": "error", "code": answer.code or "ai_peer_failed",
                         "message": service.failure_text(answer)})  # fmt: skip
    return answer
