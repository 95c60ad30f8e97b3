"""Session timers with the bridge as the refresher, and sessions the far end stops refreshing
(RFC 4028 §10, decision 0334): sipp trunks whose 2xx to the bridge's INVITE names a session of a
few seconds, and which take, refuse (422, 481, 500) or cross (491) the bridge's refreshes. A
short interval is the far end's own choice, and the bridge follows it. The pure rules (when a
refresh is due, when an unrefreshed session is given up) are at the end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiosipua import SipMessage, SipRequest

from switchboard.mediabridge.sip.refresher import (
    expiry_delay,
    expiry_margin,
    granted,
    refresh_delay,
)
from switchboard.mediabridge.sip.timer import session_timer
from tests.mediabridge.components import Sipp
from tests.mediabridge.conftest import BRIDGE_ONLY, Bridge, Platform
from tests.mediabridge.test_reinvite import sdp_version, sipp_messages, sipp_trace


async def call_through(
    bridge: Bridge, platform: Platform, tmp_path: Path, scenario: str, trunk: str, phone: str,
    trace: Path | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Place a call to ``phone`` through ``trunk``, answered by sipp running ``scenario``; the
    call's record once it ended (sipp completed its scenario)."""
    extra = ["-mi", "127.0.0.1"]
    if trace is not None:
        extra += ["-trace_msg", "-message_file", str(trace)]
    sipp = await Sipp(scenario, bridge.ports[trunk]).start(tmp_path, extra=extra)
    try:
        await platform.route(phone, [trunk])
        call_id = await platform.place(phone)
        record = await platform.ended(call_id, within=30)
        assert await sipp.exit_code() == 0, sipp.log.read_text() if sipp.log else ""
    finally:
        await sipp.stop()
    return record


def steps(trace: Path) -> list[tuple[float, str]]:
    """What sipp received (``<``) and sent (``>``), in order, each with when: the request's
    method or the response's status, ``< INVITE``, ``> 422``."""
    found = []
    for message in sipp_trace(trace):
        first = message.text.split(None, 2)
        word = first[1] if first[0].startswith("SIP/") else first[0]
        found.append((message.at, f"{'<' if message.received else '>'} {word}"))
    return found


def flow(trace: Path) -> list[str]:
    return [step for _, step in steps(trace)]


def between(trace: Path, earlier: int, later: int) -> float:
    """Seconds from step ``earlier`` of the trace to step ``later``."""
    found = steps(trace)
    return found[later][0] - found[earlier][0]


ANSWERED = ["< INVITE", "> 200", "< ACK"]  # the bridge's INVITE, or a refresh taken
FAR_HANGUP = ("ended-failed-final", "far-hangup", "")


def outcome(record: dict[str, Any]) -> tuple[str, str, str]:
    return record["status"], record["endedReason"], record["errorDetail"]


@pytest.mark.slow
@BRIDGE_ONLY
async def test_the_bridge_refreshes_a_session_the_trunk_makes_it_refresh(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    trace = tmp_path / "refreshes.log"
    record = await call_through(
        bridge, platform, tmp_path, "uas_refreshed_by_bridge.xml", "echo", "+14155550181", trace
    )
    # the scenario checked each refresh's headers and that it came within the interval; the
    # trunk hung up after the second
    assert outcome(record) == FAR_HANGUP
    received = sipp_messages(trace)
    invites = [m for m in received if m.startswith("INVITE ")]
    assert len(invites) == 3, received
    first, *refreshes = invites
    # the refresh offers the call as it is (one codec: a version up), then the same SDP again
    versions = [sdp_version(message) for message in refreshes]
    assert versions == [sdp_version(first) + 1] * 2
    assert refreshes[0].split("\n\n", 1)[1] == refreshes[1].split("\n\n", 1)[1]


@pytest.mark.slow
@BRIDGE_ONLY
@pytest.mark.parametrize(
    ("scenario", "trunk", "phone", "detail"),
    [
        pytest.param(
            "uas_refresh_refused.xml", "bye", "+14155550182",
            "the far end did not take the session refresh (481 Call/Transaction Does Not Exist)",
            id="refresh-refused-481",
        ),
        pytest.param(
            "uas_never_refreshes.xml", "hold", "+14155550183",
            "the session expired: no refresh within 4 s", id="never-refreshed",
        ),
    ],
)  # fmt: skip
async def test_a_session_gone_is_ended_with_bye_and_reported(
    bridge: Bridge, platform: Platform, tmp_path: Path, scenario: str, trunk: str, phone: str,
    detail: str,
) -> None:  # fmt: skip
    """A refresh of the bridge refused 481, or a trunk that names itself the refresher and never
    refreshes: the bridge sends BYE (each scenario waits for it) and reports why."""
    record = await call_through(bridge, platform, tmp_path, scenario, trunk, phone)
    assert outcome(record) == ("ended-failed-final", "", detail)


@pytest.mark.slow
@BRIDGE_ONLY
async def test_a_2xx_that_names_no_refresher_leaves_the_refresh_to_the_bridge(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    """``Session-Expires: 4`` without a refresher: the UAC chooses (RFC 4028 §7.2), and the
    bridge refreshes twice, naming itself (``refresher=uac``: the scenario checks it)."""
    trace = tmp_path / "unnamed.log"
    record = await call_through(
        bridge, platform, tmp_path, "uas_refresher_unnamed.xml", "pcma", "+14155550184", trace
    )
    assert outcome(record) == FAR_HANGUP
    assert flow(trace) == ANSWERED * 3 + ["> BYE", "< 200"]


@pytest.mark.slow
@BRIDGE_ONLY
async def test_a_refresh_refused_422_goes_again_at_once_with_the_min_se(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    """The trunk finds the 4 s its own 2xx named too short: the refresh goes again at once with
    ``Session-Expires: 6`` and ``Min-SE: 6`` (the scenario checks both), and the 2xx's 6 s
    session has the next refresh 3 s later."""
    trace = tmp_path / "too-small.log"
    record = await call_through(
        bridge, platform, tmp_path, "uas_refresh_too_small.xml", "bye", "+14155550185", trace
    )
    assert outcome(record) == FAR_HANGUP
    assert flow(trace) == [
        *ANSWERED, "< INVITE", "> 422", "< ACK", *ANSWERED, *ANSWERED, "> BYE", "< 200",
    ]  # fmt: skip
    assert between(trace, 4, 6) < 0.5  # the 422, the refresh again
    assert 2.8 < between(trace, 7, 9) < 3.5  # its 2xx, the next refresh


@pytest.mark.slow
@BRIDGE_ONLY
async def test_a_refresh_crossed_by_the_trunks_offer_goes_again_after_the_random_delay(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    """The refresh of a 10 s session crosses the trunk's own re-INVITE: each side answers the
    other 491. The bridge made the call's Call-ID, so it waits 2.1 to 4 s (RFC 3261 §14.1)
    before the refresh goes again, still within the session; the call goes on."""
    trace = tmp_path / "crossed.log"
    record = await call_through(
        bridge, platform, tmp_path, "uas_refresh_crossed.xml", "hold", "+14155550186", trace
    )
    assert outcome(record) == FAR_HANGUP
    assert flow(trace) == [
        *ANSWERED, "< INVITE", "> INVITE", "< 491", "> ACK", "> 491", "< ACK", *ANSWERED,
        "> BYE", "< 200",
    ]  # fmt: skip
    assert 2.1 <= between(trace, 7, 9) <= 4.2  # the trunk's 491, the refresh again
    assert between(trace, 1, 9) < 10  # the first 2xx, the refresh again: inside the session


@pytest.mark.slow
@BRIDGE_ONLY
async def test_a_refresh_refused_500_is_tried_again_until_the_session_runs_out(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    """A refusal that leaves the session standing (not 408 or 481): the bridge tries again
    half-way through what is left of the 8 s session (until the far end may give it up, 5.33 s
    after the 2xx, RFC 4028 §10), and sends BYE once less than a second is left."""
    trace = tmp_path / "failing.log"
    record = await call_through(
        bridge, platform, tmp_path, "uas_refresh_failing.xml", "hangup", "+14155550187", trace
    )
    assert outcome(record) == (
        "ended-failed-final", "",
        "the session expired: the far end refused its refresh (500 Server Internal Error)",
    )  # fmt: skip
    assert flow(trace) == [
        *ANSWERED, "< INVITE", "> 500", "< ACK", "< INVITE", "> 500", "< ACK", "< BYE", "> 200",
    ]  # fmt: skip
    # the first 500 (its refresh due 4 s after the 2xx), the refresh again half-way through
    # the 1.33 s left; the second 500, the BYE at once: 0.67 s left
    left = expiry_delay(8) - between(trace, 1, 4)
    assert between(trace, 4, 6) == pytest.approx(left / 2, abs=0.15)
    assert between(trace, 7, 9) < 0.3
    assert between(trace, 1, 9) < expiry_delay(8)


@pytest.mark.parametrize(
    ("interval", "refresh", "margin", "given_up"),
    [(4, 2, 4 / 3, 4 - 4 / 3), (90, 45, 30, 60), (1800, 900, 32, 1768)],
)
def test_refresh_at_half_the_interval_and_give_up_a_margin_before_it_ends(
    interval: int, refresh: float, margin: float, given_up: float
) -> None:
    assert refresh_delay(interval) == refresh
    assert expiry_margin(interval) == pytest.approx(margin)
    assert expiry_delay(interval) == pytest.approx(given_up)


def invite(**headers: str) -> SipRequest:
    lines = [
        "INVITE sip:+4930166@127.0.0.1 SIP/2.0",
        "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK-1",
        "From: <sip:+4930100@127.0.0.1>;tag=a",
        "To: <sip:+4930166@127.0.0.1>",
        "Call-ID: refresher-table",
        "CSeq: 1 INVITE",
        *(f"{name}: {value}" for name, value in headers.items()),
        "Content-Length: 0",
    ]
    message = SipMessage.parse(("\r\n".join(lines) + "\r\n\r\n").encode())
    assert isinstance(message, SipRequest)
    return message


@pytest.mark.parametrize(
    ("asked", "answered", "bridge_refreshes"),
    [
        ("1800;refresher=uas", "1800;refresher=uas", True),  # asked to: the bridge refreshes
        ("1800;refresher=uac", "1800;refresher=uac", False),
        ("1800", "1800;refresher=uac", False),  # none named: the far end, which wanted it
        ("90;refresher=uas", "90;refresher=uas", True),
    ],
)
def test_the_refresher_a_request_names_is_kept(
    asked: str, answered: str, bridge_refreshes: bool
) -> None:
    """RFC 4028 §9, table 2: a UAS that supports the timer keeps the refresher the request
    names; the bridge's own 2xx then tells its timer whether it refreshes."""
    status, headers = session_timer(invite(Supported="timer", **{"Session-Expires": asked}))
    assert (status, headers) == (200, {"Session-Expires": answered, "Require": "timer"})
    assert granted(headers["Session-Expires"]) == (int(asked.split(";")[0]), bridge_refreshes)
    # under the floor: 422 whoever refreshes; a far end without the timer runs none
    assert session_timer(invite(Supported="timer", **{"Session-Expires": "60;refresher=uas"})) == (
        422,
        {"Min-SE": "90"},
    )
    assert session_timer(invite(**{"Session-Expires": asked})) == (200, {})
    assert granted("") == (0, False)
