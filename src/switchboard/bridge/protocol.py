"""The bridge protocol, version 1 (docs/bridge-protocol.md): message bodies and signatures.

Every request in either direction carries ``X-Bridge-Signature: sha256=<hex>``, the HMAC-SHA256
of the raw body keyed with the shared bridge secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
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


def inbound_call_id() -> str:
    """The id of an inbound call, whichever way it came in (a browser to a virtual number, or a
    SIP INVITE for a DID): ``vnum-`` and 12 hex digits (platform spec 2.6, decision 0312)."""
    return "vnum-" + secrets.token_hex(6)


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
    # what the AI says to a voicemail greeting before it hangs up (the tenant's
    # ``Voicemail:Message``); empty: it hangs up without a message
    voicemail_message: str = ""


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
OUTCOMES = (
    "finished", "far-hangup", "empty-room", "transferred-to-vnum", "voicemail", "not-now",
    "no-answer", "cancelled", "max-duration",
)  # fmt: skip
# How a transfer handed the caller on (spec 6.2's ``transferType``); a callback that names
# none gets the platform's default for the call's direction and target.
TransferType = Literal["vnum-to-vnum", "vnum-to-officetab", "vnum-to-pstn", "outbound-to-user"]


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
    transfer_type: TransferType | Literal[""] = ""
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


# --- Rooms (docs/bridge-protocol.md, "Rooms"): the SFU behind a meeting room and the AI peer
# that answers a browser call to a virtual number. Platform → bridge paths:
ROOM_PROMOTE_PATH = "/v1/rooms/promote"
ROOM_DEMOTE_PATH = "/v1/rooms/demote"
ROOM_PUBLISHERS_PATH = "/v1/rooms/publishers"
ROOM_SUBSCRIBERS_PATH = "/v1/rooms/subscribers"
ROOM_SUBSCRIBER_ANSWER_PATH = "/v1/rooms/subscribers/answer"
ROOM_LEAVE_PATH = "/v1/rooms/leave"
ROOM_AI_PEER_PATH = "/v1/rooms/ai-peer"
# Bridge → platform:
ROOM_EVENTS_PATH = "/bridge.ashx/v1/room-events"


class RoomRef(Message):
    """Every room request names the tenant and the room (room names are unique per tenant)."""

    protocol: int = PROTOCOL_VERSION
    tenant: str
    room: str


class RoomPromote(RoomRef):
    """``POST /v1/rooms/promote``: open the room on the SFU; ``peers`` are the peers to migrate."""

    peers: list[str] = Field(default_factory=list)


class RoomPromoted(Message):
    mode: Literal["sfu", "mesh"]
    sfu_room: str = ""


class RoomDemote(RoomRef):
    """``POST /v1/rooms/demote``: close the room on the SFU (its peers return to mesh)."""


class PublisherOffer(RoomRef):
    """``POST /v1/rooms/publishers``: a peer publishes its media; the answer is the SFU's."""

    peer_id: str
    role: str = "human"
    sdp: str


class SdpReply(Message):
    """The SFU's SDP: the answer to a publisher, or the offer to a subscriber."""

    sdp: str


class SubscriberRequest(RoomRef):
    """``POST /v1/rooms/subscribers``: ``subscriberPeerId`` receives ``publisherPeerId``'s media.
    The SFU makes the offer (``SdpReply``); the subscriber answers with ``SubscriberAnswer``."""

    publisher_peer_id: str
    subscriber_peer_id: str


class SubscriberAnswer(SubscriberRequest):
    """``POST /v1/rooms/subscribers/answer``."""

    sdp: str


class RoomLeave(RoomRef):
    """``POST /v1/rooms/leave``: tear down the peer's SFU connections."""

    peer_id: str


class AiPeerRequest(RoomRef):
    """``POST /v1/rooms/ai-peer``: the bridge starts a WebRTC peer (role ``ai-vnum``) that joins
    the room over ``signalUrl`` with ``joinToken`` and lets the call's engine talk in it. It
    reports with the ordinary callbacks (``inbound-ai-started``, ``inbound-ended``; source
    ``vnum``, ``room``) to ``callbackUrl``."""

    call_id: str
    signal_url: str
    join_token: str = Field(repr=False)
    callback_url: str
    number: str
    name: str = ""
    voice: str = ""
    language: str = ""
    model: str = ""
    max_seconds: int = 0
    system_prompt: str = Field(default="", repr=False)
    api_key: str = Field(default="", repr=False)


RoomErrorPhase = Literal["promote", "demote", "publish", "subscribe", "answer", "leave", "ai-peer"]


class RoomError(Message):
    """A non-2xx answer to a room request: ``code`` is machine-readable (``sfu_rejected``,
    ``sfu_unreachable``, ``unknown_room``, ``bad_sdp``...), ``error`` is for people."""

    code: str
    phase: RoomErrorPhase
    error: str = ""


RoomCallbackType = Literal["publisher-connected", "subscriber-connected"]


class RoomCallback(Message):
    """bridge → platform ``POST /bridge.ashx/v1/room-events``: an SFU connection came up."""

    protocol: int = PROTOCOL_VERSION
    event_id: str
    tenant: str
    room: str
    type: RoomCallbackType
    peer_id: str = ""
    publisher_peer_id: str = ""
    subscriber_peer_id: str = ""
    connected_utc: str
    packets_at_conn: int = Field(default=0, ge=0)
    packets_forwarded_at_conn: int = Field(default=0, ge=0)
