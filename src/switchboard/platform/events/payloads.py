"""The ``data`` of every event (spec 6.2) and the envelope it is delivered in (6.1), as models.

``webhooks.outbox.emit`` checks each payload against its event's model before it writes
anything (``check``), and the OpenAPI document's ``webhooks`` section is generated from the
same models, so what a receiver is promised is what the platform sends (decision 0215).

The models take the payload as the fire sites build it, a dict of JSON values: exact names,
exact JSON types (``strict``: ``"3"`` is no integer, ``1`` no boolean), no field the catalogue
does not list (``extra="forbid"``). A field the catalogue marks 'only' is declared with
``only``: not required, and absent where it does not apply, never null. A field sent as null is
typed ``X | None`` and required.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    create_model,
)
from pydantic.alias_generators import to_camel

from switchboard.bridge.protocol import OUTCOMES as GLOSSARY
from switchboard.bridge.protocol import TransferType
from switchboard.platform.events import catalogue as ev

# The outcome glossary (spec 6.3), and the empty outcome of a technical failure, which
# ``errorDetail`` describes (the bridge reports nothing else: ``calls.service.checked_outcome``).
OUTCOMES: tuple[str, ...] = ("", *GLOSSARY)


def _within(values: tuple[str, ...]) -> AfterValidator:
    def one_of(value: str) -> str:
        if value not in values:
            raise ValueError(f"not one of {', '.join(repr(v) for v in values)}")
        return value

    return AfterValidator(one_of)


Outcome = Annotated[
    str,
    _within(OUTCOMES),
    WithJsonSchema({"type": "string", "enum": list(OUTCOMES)}),
]
Direction = Literal["inbound", "outbound"]
Role = Literal["human", "ai-vnum", "sip-bridge"]
Pref = Literal["auto", "prefer-mesh", "prefer-sfu"]
Trigger = Literal["auto-join", "auto-bandwidth", "admin"]
SfuOutcome = Literal["answer", "failed"]


def _absent(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def only(description: str) -> Any:
    """A field present only in the case ``description`` names (spec 6.2's 'only'): not
    required, and left out, never null, where it does not apply. Typed without ``None``, so a
    payload that sends it as null is refused."""
    return Field(default=None, description=description, json_schema_extra=_absent)


class Payload(BaseModel):
    """Base of an event's ``data``: camelCase names, JSON types as sent, nothing else."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", strict=True, frozen=True)


OUTBOUND = "Outbound AI calls only"
VNUM = "Virtual-number calls only"
SIP = "SIP inbound calls only"


class CallStartedData(Payload):
    """After the AI is connected and the ringback cue played."""

    call_id: str
    number: str = only("Virtual-number and SIP inbound calls only: the number called")
    did: str = only(SIP)
    phone: str = only(OUTBOUND)
    display_name: str = only(OUTBOUND)
    room: str = only(VNUM)
    direction: Direction
    source: Literal["vnum", "ai-live", "outbound-ai"]


class CallAnsweredData(Payload):
    """A SIP dialog accepted the call (the outbound callee picked up, or the inbound
    receptionist sent 200 OK); arrives just before `call.started`. Not emitted for calls to a
    virtual number from a browser."""

    call_id: str
    phone: str = only(OUTBOUND)
    display_name: str = only(OUTBOUND)
    trunk_id: str = only(OUTBOUND)
    did: str = only(SIP)
    from_number: str = only(SIP)
    direction: Direction
    source: Literal["outbound-ai", "ai-live"]
    answer_ms: int = Field(description="Milliseconds from the INVITE or the ring to the 200 OK")


class CallTransferredData(Payload):
    """The AI handed the caller to another party with its transfer tool."""

    call_id: str
    from_vnum: str = only("Source `vnum` only: the virtual number called")
    from_outbound: str = only("Source `outbound-ai` only: the outbound call's id")
    from_phone: str = only("Source `outbound-ai` only: the callee's number")
    to_user: str = only("A user or extension target only")
    to_phone: str = only("A phone number target only")
    transfer_type: TransferType
    trunk_id: str = only("Transfer type `outbound-to-user` only: the trunk of the call")
    room: str = only("Source `vnum` only")
    source: Literal["vnum", "outbound-ai"]


class CallEndedData(Payload):
    """A virtual-number or SIP AI-receptionist call ended."""

    call_id: str
    number: str = Field(description="The virtual number, or the DID of an inbound SIP call")
    room: str = Field(description="The room of a virtual-number call; empty for SIP")
    outcome: Outcome = Field(description="Spec 6.3; empty after a technical failure")
    duration_sec: int
    tokens: int = Field(description="Input plus output tokens")
    source: Literal["vnum", "sip"]


class OutboundAiFinishedData(Payload):
    """An outbound AI call attempt completed: unanswered, voicemail, finished, a technical
    failure or cancelled."""

    call_id: str
    phone: str
    display_name: str
    outcome: Outcome = Field(
        description="Spec 6.3; empty after a technical failure, which `errorDetail` describes"
    )
    answered: bool
    talk_sec: int
    trunk: str
    input_turns: int
    output_turns: int
    error_detail: str = Field(description="What failed, on technical failures; else empty")


class TranscriptSavedData(Payload):
    """After `call.ended` or `outbound-ai.finished`, when a transcript was saved; fetch it
    with `GET /api.ashx/v1/transcripts/{callId}`."""

    call_id: str
    phone: str = only(OUTBOUND)
    display_name: str = only(OUTBOUND)
    number: str = only("Inbound calls only (source `vnum`)")
    file: str
    outcome: Outcome = Field(description="Spec 6.3; empty after a technical failure")
    source: Literal["outbound-ai", "vnum"]


HINT = "An ellipsis and the token's last 8 characters"


class ShareCreatedData(Payload):
    """An admin created a revocable public transcript-share link."""

    token: str = Field(description=HINT)
    file: str
    ttl_hours: int = Field(description="0: the share never expires")
    created_by: str
    expires_utc: str | None = Field(description="ISO 8601 UTC; null when `ttlHours` is 0")


class ShareViewedData(Payload):
    """A share URL was opened (the page is public)."""

    token: str = Field(description=HINT)
    file: str
    viewer_ip: str


class ShareRevokedData(Payload):
    """An admin revoked a share; its URL answers 404 from now on."""

    token: str = Field(description=HINT)
    file: str
    revoked_by: str


ADMIN = "Trigger `admin` only: the admin's username, or `signature`"


class RoomCascadePromotedData(Payload):
    """A room moved from mesh to the SFU."""

    room: str
    mode: Literal["sfu"]
    reason: str = Field(
        description="`auto-promote-join-human-count-<n>`, "
        "`auto-promote-bandwidth-degraded-stressed-<n>-of-<m>`, `admin-override` or the "
        "admin's text"
    )
    trigger: Trigger
    human_count: int = only("Triggers `auto-join` and `auto-bandwidth` only: browser humans")
    stressed_count: int = only("Trigger `auto-bandwidth` only")
    peer_count: int = only("Trigger `auto-bandwidth` only")
    actor: str = only(ADMIN)


class RoomCascadeDemotedData(Payload):
    """An admin moved a room from the SFU back to mesh."""

    room: str
    mode: Literal["mesh"]
    reason: str = Field(description="`admin-override` or the admin's text")
    trigger: Literal["admin"]
    actor: str = Field(description="The admin's username, or `signature`")


class RoomCascadeFailedData(Payload):
    """The bridge failed a promote or a demote; the room keeps its mode. `trigger` is the
    failed move's, `auto-bandwidth` included (decision 0804)."""

    room: str
    mode: Literal["sfu", "mesh"] = Field(description="The mode the failed move was to")
    reason: str
    trigger: Trigger
    human_count: int = only("Trigger `auto-join` only: browser humans")
    actor: str = only(ADMIN)
    error: str = Field(max_length=200)


class RoomPeerJoinedData(Payload):
    """A peer was admitted to a room and its join announced to the others."""

    room: str
    peer_id: str
    name: str
    role: Role
    verified: bool = Field(description="True when the join was backed by an identity")
    ip: str
    join_path: Literal["direct", "admit"]
    peer_count: int = Field(description="Every peer after the join")


class RoomPeerLeftData(Payload):
    """A peer's socket closed, the leave that empties the room included."""

    room: str
    peer_id: str
    name: str
    role: Role
    verified: bool
    ip: str
    reason: Literal["ws-close", "kick", "timeout"] = Field(
        description="`ws-close`; `kick` and `timeout` are reserved for later"
    )
    peer_count: int = Field(description="Every peer after the leave; 0 when emptied")


class SampleMetrics(Payload):
    """The stressed reports of the window, summed up."""

    abr_mbps: float = Field(description="The lowest outgoing bitrate, Mbps")
    loss_pct: float = Field(description="The peak packet loss, percent")
    rtt_ms: float = Field(description="The peak round-trip time, ms")


class RoomBandwidthDegradedData(Payload):
    """At least `MinStressedPeers` peers were stressed within the window (then quiet for 5
    minutes per room)."""

    room: str
    stressed_count: int
    peer_count: int
    human_count: int = Field(description="Browser humans")
    window_sec: int
    trigger_peer_id: str
    sample_metrics: SampleMetrics


class SfuRequestOutcome(Payload):
    """What the bridge made of an SFU request a browser's message was proxied as."""

    outcome: SfuOutcome
    code: str | None = Field(description="The bridge's error code on failure; null on success")
    phase: str
    http_status: int = Field(description="The bridge's HTTP status; 0 when it was unreachable")


class SfuOfferReceivedData(SfuRequestOutcome):
    """A browser's `sfu-offer` was proxied to the bridge, whatever the outcome."""

    room: str
    peer_id: str
    role: Role
    offer_len: int = Field(description="Bytes of the offer's SDP")


class SfuPublisherConnectedData(Payload):
    """A publisher connection reached connected on the bridge."""

    room: str
    peer_id: str
    role: Role
    connected_utc: str
    packets_at_conn: int


class SfuSubscribeReceivedData(SfuRequestOutcome):
    """A browser's `sfu-subscribe-offer` was proxied to the bridge, whatever the outcome."""

    room: str
    publisher_peer_id: str
    subscriber_peer_id: str
    offer_len: int = Field(description="Bytes of the SDP offer the bridge answered with")


class SfuSubscriberConnectedData(Payload):
    """A subscriber's connection to a publisher reached connected on the bridge."""

    room: str
    publisher_peer_id: str
    subscriber_peer_id: str
    connected_utc: str
    packets_forwarded_at_conn: int


class VoteTally(Payload):
    """Humans per preference."""

    model_config = ConfigDict(alias_generator=None)

    auto: int
    prefer_mesh: int = Field(alias="prefer-mesh")
    prefer_sfu: int = Field(alias="prefer-sfu")


class RoomClientPreferenceChangedData(Payload):
    """A human changed its media preference (its vote)."""

    room: str
    peer_id: str
    role: Role
    prev_pref: Pref
    new_pref: Pref
    vote_tally: VoteTally
    effective_threshold: int = Field(
        description="`AutoPromoteHumanCount` shifted by the votes (decision 0800)"
    )


class WebhookTestData(Payload):
    """Queued for one subscription from the console or `switchboard webhook test`."""

    subscription_id: str
    message: str


PAYLOADS: dict[str, type[Payload]] = {
    ev.CALL_STARTED: CallStartedData,
    ev.CALL_ANSWERED: CallAnsweredData,
    ev.CALL_TRANSFERRED: CallTransferredData,
    ev.CALL_ENDED: CallEndedData,
    ev.OUTBOUND_AI_FINISHED: OutboundAiFinishedData,
    ev.TRANSCRIPT_SAVED: TranscriptSavedData,
    ev.SHARE_CREATED: ShareCreatedData,
    ev.SHARE_VIEWED: ShareViewedData,
    ev.SHARE_REVOKED: ShareRevokedData,
    ev.ROOM_CASCADE_PROMOTED: RoomCascadePromotedData,
    ev.ROOM_CASCADE_DEMOTED: RoomCascadeDemotedData,
    ev.ROOM_CASCADE_FAILED: RoomCascadeFailedData,
    ev.ROOM_PEER_JOINED: RoomPeerJoinedData,
    ev.ROOM_PEER_LEFT: RoomPeerLeftData,
    ev.ROOM_BANDWIDTH_DEGRADED: RoomBandwidthDegradedData,
    ev.SFU_OFFER_RECEIVED: SfuOfferReceivedData,
    ev.SFU_PUBLISHER_CONNECTED: SfuPublisherConnectedData,
    ev.SFU_SUBSCRIBE_RECEIVED: SfuSubscribeReceivedData,
    ev.SFU_SUBSCRIBER_CONNECTED: SfuSubscriberConnectedData,
    ev.ROOM_CLIENT_PREFERENCE_CHANGED: RoomClientPreferenceChangedData,
    ev.WEBHOOK_TEST: WebhookTestData,
}


class PayloadMismatch(ValueError):
    """An event's data is not what the catalogue says: a programming error (nothing is
    written, nothing is sent)."""


def check(event: str, data: Mapping[str, Any]) -> None:
    """Raise ``PayloadMismatch`` unless ``data`` is exactly the catalogue's ``data`` of
    ``event`` (an unknown event name included)."""
    model = PAYLOADS.get(event)
    if model is None:
        raise PayloadMismatch(f"unknown event {event!r}")
    try:
        model.model_validate(data)
    except ValidationError as exc:
        found = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'data'}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        raise PayloadMismatch(f"{event}: {found}") from exc


class Envelope(BaseModel):
    """The body of every delivery (spec 6.1); its bytes never change across attempts."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    event: str = Field(description="The event name, as in `X-Platform-Event`")
    tenant: str = Field(description="The tenant's name")
    ts: str = Field(
        description="When the event was emitted, ISO 8601 UTC",
        json_schema_extra={"format": "date-time"},
    )
    data: Payload


def envelope_of(event: str) -> type[Envelope]:
    """The envelope of ``event``: ``event`` its name exactly, ``data`` its model's."""
    data = PAYLOADS[event]
    name = data.__name__.removesuffix("Data") + "Event"
    literal = cast(Any, Literal)[event]
    return create_model(
        name,
        __base__=Envelope,
        __doc__=f"The body of a `{event}` delivery (spec 6.1)",
        event=(literal, Field(description="The event name, as in `X-Platform-Event`")),
        data=(data, ...),
    )
