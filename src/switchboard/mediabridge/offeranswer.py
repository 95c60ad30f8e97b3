"""The SDP of one call leg (RFC 3264): the bridge's offer or answer when the call starts, and
its answers to the far end's new offers during the call (re-INVITE, UPDATE; decision 0328).

The bridge keeps its address, port and codec for the whole call. A new offer that lists the
call's codec is answered with them, in the direction that answers the offer's (``sendonly`` is
answered ``recvonly``, ``inactive`` ``inactive``; a connection address of 0.0.0.0, the old way to
hold a call, counts as ``sendonly``), and moves the far end's media when it names another
address. An offer without the call's codec, or with an address the bridge may not send to, is
refused and changes nothing. The ``o=`` line's version goes up by one whenever the bridge's SDP
differs from the one it sent before (RFC 3264 §8), and stays when a refresh changes nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from aiosipua import SdpMessage, parse_sdp
from aiosipua.sdp import MediaDescription

from switchboard.mediabridge.engines.base import FRAME_MS
from switchboard.mediabridge.media import (
    CODECS,
    DTMF_PT,
    Negotiated,
    RtpLeg,
    formats,
    sendable,
)

DIRECTIONS = ("sendrecv", "sendonly", "recvonly", "inactive")
# the bridge's direction that answers the far end's (RFC 3264 §6.1)
ANSWERS = {"sendrecv": "sendrecv", "sendonly": "recvonly", "recvonly": "sendonly",
           "inactive": "inactive"}  # fmt: skip
# a far end that names 0.0.0.0 receives nothing (RFC 3264 §8.4): what its direction then says
NOWHERE = {"sendrecv": "sendonly", "recvonly": "inactive"}


def describe(
    host: str, port: int, session_id: int, version: int, payload_types: Sequence[int],
    dtmf: int | None, direction: str,
) -> bytes:  # fmt: skip
    """The bridge's SDP: one audio stream at ``host:port``."""
    listed = [*payload_types, *([dtmf] if dtmf is not None else [])]
    lines = [
        "v=0",
        f"o=switchboard {session_id} {version} IN IP4 {host}",
        "s=switchboard",
        f"c=IN IP4 {host}",
        "t=0 0",
        f"m=audio {port} RTP/AVP {' '.join(str(pt) for pt in listed)}",
        *(f"a=rtpmap:{pt} {CODECS[pt]}/8000" for pt in payload_types),
    ]
    if dtmf is not None:
        lines += [f"a=rtpmap:{dtmf} telephone-event/8000", f"a=fmtp:{dtmf} 0-16"]
    lines += [f"a=ptime:{FRAME_MS}", f"a={direction}"]
    return ("\r\n".join(lines) + "\r\n").encode()


def _direction(sdp: SdpMessage, audio: MediaDescription) -> str:
    """The audio stream's direction: its own attribute, else the session's, else sendrecv."""
    for attributes in (audio.attributes, sdp.attributes):
        found = next((d for d in DIRECTIONS if d in attributes), None)
        if found is not None:
            return found
    return "sendrecv"


def _parse(body: bytes) -> SdpMessage | None:
    try:
        return parse_sdp(body.decode("utf-8", "replace"))
    except (ValueError, IndexError):
        return None


@dataclass
class CallMedia:
    """One leg's SDP: what the bridge last sent (``sent``, its version) and what was agreed
    (``negotiated``). ``peer`` is the host the far end's SIP comes from (``negotiate``'s
    loopback rule)."""

    leg: RtpLeg
    peer: str
    session_id: int = field(default_factory=lambda: secrets.randbelow(2**31))
    version: int = field(init=False)
    sent: bytes = b""
    direction: str = "sendrecv"  # the direction of ``sent``
    negotiated: Negotiated | None = None
    # told the direction of each new offer of the far end the bridge takes (``sendonly``: the
    # far end holds the call), so the other leg of a relay can be offered the same
    on_offer: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        self.version = self.session_id

    async def open(self, negotiated: Negotiated, peers: Iterable[str]) -> None:
        """Bind the leg to what the first offer and answer agreed."""
        self.negotiated = negotiated
        await self.leg.open(negotiated, peers)

    def first_offer(self) -> bytes:
        """The offer of an outbound INVITE: both G.711 codecs and telephone-event."""
        return self._send(list(CODECS), DTMF_PT, "sendrecv")

    def first_answer(self) -> bytes:
        """The answer to an inbound INVITE's offer, once ``open`` took it."""
        assert self.negotiated is not None
        return self._send([self.negotiated.payload_type], self.negotiated.dtmf, "sendrecv")

    def answer(self, offer: bytes) -> bytes | None:
        """The bridge's answer to a new offer, applied to the leg; ``None`` when the offer is
        refused (488) and nothing changed."""
        taken = self._take(_parse(offer))
        if taken is None:
            return None
        negotiated, direction = taken
        self._apply(negotiated, direction)
        if self.on_offer is not None:
            self.on_offer(ANSWERS[direction])  # the far end's own direction
        return self._send([negotiated.payload_type], negotiated.dtmf, direction)

    def offer(self, direction: str = "sendrecv") -> bytes:
        """The bridge's offer for a re-INVITE: the call as it is, in ``direction`` (a re-INVITE
        without an offer gets ``sendrecv``; a hold passed on from a relay's other leg, the
        direction that leg's far end asked for)."""
        assert self.negotiated is not None
        dtmf = self.negotiated.dtmf if self.negotiated.dtmf is not None else DTMF_PT
        return self._send([self.negotiated.payload_type], dtmf, direction)

    def again(self) -> bytes:
        """The offer of a session refresh (decision 0334): the call as it is, in the direction
        the bridge last sent; after the first refresh the same SDP, its version too."""
        return self.offer(self.direction)

    def answered(self, answer: bytes) -> bool:
        """Apply the far end's answer to ``offer()``; False when it cannot be used."""
        taken = self._take(_parse(answer))
        if taken is not None:
            self._apply(*taken)
        return taken is not None

    def _take(self, sdp: SdpMessage | None) -> tuple[Negotiated, str] | None:
        """What an SDP of the far end asks of the leg, and the bridge's direction."""
        current = self.negotiated
        if current is None or sdp is None or sdp.audio is None or sdp.rtp_address is None:
            return None
        direction, remote = _direction(sdp, sdp.audio), sdp.rtp_address
        if remote[0] == "0.0.0.0":  # noqa: S104 (not a bind address: a hold)
            direction, remote = NOWHERE.get(direction, direction), current.remote
        elif not sendable(remote, self.peer):
            return None
        codecs, dtmf = formats(sdp.audio)
        if current.payload_type not in codecs:
            return None
        return Negotiated(remote, current.payload_type, dtmf), ANSWERS[direction]

    def _apply(self, negotiated: Negotiated, direction: str) -> None:
        self.negotiated = negotiated
        self.leg.change(negotiated, direction)

    def _send(self, payload_types: list[int], dtmf: int | None, direction: str) -> bytes:
        """The SDP the bridge sends now, its version one up when it differs from the last."""
        leg = self.leg
        body = describe(leg.host, leg.port, self.session_id, self.version, payload_types, dtmf,
                        direction)  # fmt: skip
        if self.sent and body != self.sent:
            self.version += 1
            body = describe(leg.host, leg.port, self.session_id, self.version, payload_types,
                            dtmf, direction)  # fmt: skip
        self.sent, self.direction = body, direction
        return body
