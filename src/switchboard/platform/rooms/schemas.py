"""The signaling messages a peer sends (docs/rooms.md): one JSON object per text frame."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

Role = Literal["human", "ai-vnum", "sip-bridge"]
Pref = Literal["auto", "prefer-mesh", "prefer-sfu"]
Mode = Literal["mesh", "sfu"]
MODES: tuple[str, ...] = get_args(Mode)  # spec 3.3
PeerId = Annotated[str, Field(min_length=1, max_length=64)]
Sdp = Annotated[str, Field(min_length=1)]


class ClientMessage(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Join(ClientMessage):
    type: Literal["join"]
    name: str = Field(min_length=1, max_length=100)
    role: Role = "human"
    token: str | None = Field(default=None, max_length=4096, repr=False)
    pref: Pref = "auto"
    call: str | None = Field(default=None, min_length=1, max_length=32)  # a virtual number


class Relay(ClientMessage):
    type: Literal["offer", "answer"]
    to: PeerId
    sdp: Sdp


class IceCandidate(BaseModel):
    model_config = ConfigDict(extra="allow")
    candidate: str = Field(max_length=2048)
    sdpMid: str | None = None  # noqa: N815 (the browser's field names)
    sdpMLineIndex: int | None = None  # noqa: N815


class Candidate(ClientMessage):
    type: Literal["candidate"]
    to: PeerId
    candidate: IceCandidate | None


class Admit(ClientMessage):
    type: Literal["admit"]
    peer_id: PeerId


class Stats(ClientMessage):
    type: Literal["stats"]
    abr_mbps: float = Field(ge=0)
    loss_pct: float = Field(ge=0, le=100)
    packets_sent: int = Field(ge=0)
    rtt_ms: float = Field(ge=0)


class Preference(ClientMessage):
    type: Literal["preference"]
    pref: Pref


class SfuOffer(ClientMessage):
    type: Literal["sfu-offer"]
    sdp: Sdp


class SfuSubscribeOffer(ClientMessage):
    type: Literal["sfu-subscribe-offer"]
    publisher_peer_id: PeerId


class SfuSubscribeAnswer(ClientMessage):
    type: Literal["sfu-subscribe-answer"]
    publisher_peer_id: PeerId
    sdp: Sdp


class Leave(ClientMessage):
    type: Literal["leave"]


Message = Annotated[
    Join
    | Relay
    | Candidate
    | Admit
    | Stats
    | Preference
    | SfuOffer
    | SfuSubscribeOffer
    | SfuSubscribeAnswer
    | Leave,
    Field(discriminator="type"),
]
MESSAGE = TypeAdapter[Message](Message)


class SfuModeBody(BaseModel):
    """``POST /signal.ashx?sfu-mode=sfu|mesh&room=<name>``: optional operator text."""

    model_config = ConfigDict(extra="forbid")
    # Either casing, as every request body (spec 9.3); nothing else, so no whitelist body fits.
    reason: str = Field(
        default="", max_length=200, validation_alias=AliasChoices("reason", "Reason")
    )


class SfuModeReply(BaseModel):
    # Every member is sent (``error`` is empty unless the flip failed), so the document's
    # reply schema (serialization mode) lists them all as required.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    ok: bool
    tenant: str
    room: str
    mode: Mode
    changed: bool
    error: str = ""
