"""The caller-ID label the bridge writes into an INVITE's From: whatever the dial carries, one
well-formed quoted-string (RFC 3261 §25.1), so the header cannot be split or left open. The
platform refuses labels with controls (``calls.schemas.LABEL_RE``); the bridge does not rely
on it, since its protocol has other callers."""

from __future__ import annotations

import pytest
from aiosipua import SipMessage, SipRequest, parse_address

from switchboard.mediabridge.sip import messages


@pytest.mark.parametrize(
    ("label", "shown"),
    [
        ("Front desk", "Front desk"),
        ("Bob\r\nX-Injected: 1", "Bob  X-Injected: 1"),
        ('say "hi"', "say 'hi'"),
        ("ends in \\", "ends in \\"),
        ("next\u2028line", "next line"),
    ],
)
def test_a_label_makes_one_from_header(label: str, shown: str) -> None:
    request = messages.request(
        "INVITE", "sip:+14155550100@127.0.0.1",
        via_value=messages.via("udp", ("127.0.0.1", 5060), messages.new_branch()),
        from_value=f"{messages.quoted(label)} <sip:switchboard@pbx.test>;tag=1",
        to_value="<sip:+14155550100@127.0.0.1>", call_id="c@h", cseq=1,
    )  # fmt: skip
    parsed = SipMessage.parse(bytes(request))
    assert isinstance(parsed, SipRequest)
    assert parsed.headers.get("x-injected") == []
    sent = parsed.headers.get_first("from") or ""
    address = parse_address(sent)
    assert address.uri.user == "switchboard"
    assert address.tag == "1"
    assert (address.display_name or "").replace("\\\\", "\\") == shown
