"""The bridge protocol, version 1 (docs/bridge-protocol.md): message bodies and signatures.

Every request in either direction carries ``X-Bridge-Signature: sha256=<hex>``, the HMAC-SHA256
of the raw body keyed with the shared bridge secret.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

PROTOCOL_VERSION = 1
SIGNATURE_HEADER = "X-Bridge-Signature"
CALLBACK_PATH = "/bridge.ashx/v1/events"
INBOUND_ROUTE_PATH = "/bridge.ashx/v1/inbound-route"


def derive_secret(bridge_secret: str, secret_key: str) -> str:
    """The shared secret: the configured one, or one derived from the platform's key (the
    built-in simulator lives in-process, so both sides can derive it)."""
    if bridge_secret:
        return bridge_secret
    return hashlib.sha256(f"bridge-secret:{secret_key}".encode()).hexdigest()


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str | None) -> bool:
    if not header:
        return False
    return hmac.compare_digest(sign(secret, body), header.strip())


class Message(BaseModel):
    """camelCase on the wire in both directions."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True, extra="ignore"
    )


class DialRequest(Message):
    """platform → bridge ``POST /v1/calls``: place one attempt of an outbound call."""

    protocol: int = PROTOCOL_VERSION
    call_id: str
    attempt: int
    tenant: str
    phone: str
    display_name: str
    trunk_ids: list[str]
    voice: str
    language: str
    model: str
    max_seconds: int
    system_prompt: str = Field(repr=False)
    api_key: str = Field(repr=False)
    callback_url: str


class DialReply(Message):
    accepted: bool
    call_id: str
    attempt: int
    bridge_call_id: str = ""


class CallRef(Message):
    """platform → bridge ``POST /v1/calls/{callId}/hangup`` and ``/status``."""

    protocol: int = PROTOCOL_VERSION
    call_id: str
    attempt: int
    actor: str = ""


BridgeCallState = Literal["ringing", "answered", "ended", "unknown"]

# The outcome glossary (spec 6.3): the only outcomes a bridge reports. A technical failure has
# no outcome (``""``) and says what failed in ``errorDetail``.
OUTCOMES = frozenset({
    "finished", "far-hangup", "empty-room", "transferred-to-vnum", "voicemail", "not-now",
    "no-answer", "cancelled", "max-duration",
})  # fmt: skip


class Turn(Message):
    speaker: Literal["AI", "Caller"]
    text: str
    ts: str


class EndedFields(Message):
    outcome: str = ""
    answered: bool = False
    talk_sec: int = Field(default=0, ge=0)
    error_detail: str = ""
    input_turns: int = Field(default=0, ge=0)
    output_turns: int = Field(default=0, ge=0)
    tokens_prompt: int = Field(default=0, ge=0)
    tokens_total: int = Field(default=0, ge=0)
    turns: list[Turn] = Field(default_factory=list)
    # What the SIP dialog and its media did (0 where the bridge has no SIP leg).
    sip_status: int = Field(default=0, ge=0)
    rtp_packets_sent: int = Field(default=0, ge=0)
    rtp_packets_received: int = Field(default=0, ge=0)


CallbackType = Literal[
    "answered", "ai-started", "transferred", "ended",
    "inbound-answered", "inbound-ai-started", "inbound-transferred", "inbound-ended",
]  # fmt: skip


class Callback(Message):
    """bridge → platform ``POST /bridge.ashx/v1/events``: one event of a call.

    Outbound events name ``callId`` and ``attempt``; inbound events also name the ``tenant``
    and the inbound fields (``source``, ``number``, ``did``, ``fromNumber``, ``room``).
    """

    protocol: int = PROTOCOL_VERSION
    event_id: str
    type: CallbackType
    call_id: str
    attempt: int = 1
    ts: str = ""
    # answered
    trunk_id: str = ""
    answer_ms: int = Field(default=0, ge=0)
    # transferred
    to_user: str = ""
    to_phone: str = ""
    transfer_type: str = ""
    # ended
    ended: EndedFields | None = None
    # inbound calls
    tenant: str = ""
    source: str = ""
    number: str = ""
    did: str = ""
    from_number: str = ""
    room: str = ""
    display_name: str = ""
    voice: str = ""
    language: str = ""
    model: str = ""
    rule: str = ""


class InboundRouteRequest(Message):
    """bridge → platform ``POST /bridge.ashx/v1/inbound-route``: who answers an inbound INVITE.

    ``domain`` is the host of the INVITE's request URI (it names the tenant when it is one of
    the tenant's domains); ``did`` the dialled user part; ``fromNumber`` the caller's user part
    (``anonymous`` when withheld).
    """

    protocol: int = PROTOCOL_VERSION
    domain: str = ""
    did: str
    from_number: str = ""


InboundAction = Literal["ai", "office-tab"]


class InboundRouteReply(Message):
    """The platform's decision. ``404 not_found`` instead when no route matches: the bridge
    refuses the INVITE with 404 and reports nothing."""

    tenant: str
    action: InboundAction
    rule: str = ""
    number: str = ""
    # action "ai": the virtual number's receptionist (secrets: never log them)
    name: str = ""
    voice: str = ""
    language: str = ""
    model: str = ""
    max_seconds: int = 0
    system_prompt: str = Field(default="", repr=False)
    api_key: str = Field(default="", repr=False)
    # action "office-tab": the user whose phone rings, at the SIP address the operator stored
    user: str = ""
    sip_uri: str = ""


class StatusReply(Message):
    """bridge → platform: what the bridge knows of one attempt.

    ``events`` is the attempt's own log, in order (``answered``, ``ai-started``,
    ``transferred``, ``ended``), whether or not their callbacks got through: a platform that
    lost callbacks (a worker killed, the API down) recovers them from here.
    """

    call_id: str
    attempt: int
    state: BridgeCallState
    ended: EndedFields | None = None
    events: list[Callback] = Field(default_factory=list)
