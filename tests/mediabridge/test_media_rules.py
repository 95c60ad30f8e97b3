"""Where the bridge agrees to send a call's media: the address rules of ``negotiate`` that the
wire tests cannot reach from loopback alone (decision 0326)."""

from __future__ import annotations

import pytest
from aiosipua import parse_sdp

from switchboard.mediabridge.media import negotiate
from tests.mediabridge.rawsip import sdp


@pytest.mark.parametrize(
    ("host", "peer", "taken"),
    [
        ("127.0.0.1", "127.0.0.1", True),  # a phone on the bridge's own host
        ("127.0.0.1", "localhost", True),
        ("127.0.0.1", "203.0.113.5", False),  # a far end on the network naming loopback
        ("127.0.0.53", "[2001:db8::1]", False),
        ("10.0.0.5", "203.0.113.5", True),  # a carrier behind NAT names its private address
        ("203.0.113.9", "203.0.113.5", True),  # a media server apart from the signalling
        ("0.0.0.0", "203.0.113.5", False),
        ("224.0.0.1", "203.0.113.5", False),
        ("255.255.255.255", "203.0.113.5", False),
        ("media.example.net", "203.0.113.5", False),
    ],
)
def test_the_media_address_of_an_offer(host: str, peer: str, taken: bool) -> None:
    negotiated = negotiate(parse_sdp(sdp(host=host, port=40000)), peer)
    assert (negotiated is not None) == taken
    if negotiated is not None:
        assert (negotiated.remote, negotiated.payload_type, negotiated.dtmf) == (
            (host, 40000), 0, 101
        )  # fmt: skip
