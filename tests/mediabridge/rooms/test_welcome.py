"""The AI peer takes its ICE servers from the signaling ``welcome`` (and none by default: no
public STUN server is contacted unless the platform names one)."""

from __future__ import annotations

from switchboard.webrtc.mesh import ice_servers


def test_ice_servers_of_the_welcome() -> None:
    listed = [
        {"urls": ["turn:turn.example.net:3478?transport=udp"], "username": "u", "credential": "c"},
        {"urls": "stun:stun.example.net"},
        {"username": "no urls"},
        "not an object",
    ]
    found = ice_servers(listed)
    assert [s.urls for s in found] == [
        ["turn:turn.example.net:3478?transport=udp"], "stun:stun.example.net"
    ]  # fmt: skip
    assert (found[0].username, found[0].credential) == ("u", "c")
    assert ice_servers(None) == []
