"""A carrier's re-INVITEs and UPDATEs in an answered call: session refreshes (RFC 4028), a
re-INVITE that crosses another (491) or comes out of order (500), an offer without the call's
codec (488), and the answer the bridge never gets acknowledged (decision 0328). Hold, resume
and media moved are in test_hold.py. The module's bridge hangs up a call whose far end sends no
media for 1 s (``--rtp-timeout-sec``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.mediabridge.components import Sipp
from tests.mediabridge.conftest import BRIDGE_ONLY, Bridge, Platform
from tests.mediabridge.rawsip import Caller, Udp, hears, media_port, sdp, speaking
from tests.mediabridge.test_inbound import inbound_ended

pytestmark = [pytest.mark.slow, BRIDGE_ONLY]

DID = "+4930166"
RTP_TIMEOUT_SEC = 1
TIMER = {"Supported": "timer", "Session-Expires": "90;refresher=uac"}


@pytest.fixture(scope="module")
def bridge_options() -> list[str]:
    return ["--rtp-timeout-sec", str(RTP_TIMEOUT_SEC)]


async def transcript(platform: Platform, call_id: str) -> dict[str, Any]:
    response = await platform.http.get(
        f"/api.ashx/v1/transcripts/{call_id}", headers=platform.headers
    )
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def test_a_session_refresh_is_answered_with_the_same_sdp_and_the_call_goes_on(
    bridge: Bridge, receptionist: Platform, caller: Caller, phone: Udp
) -> None:
    ok = await caller.answered(phone.port, headers=TIMER)
    # the carrier refreshes; the bridge never has to (RFC 4028 §9, decision 0328)
    assert ok.headers.get_first("session-expires") == "90;refresher=uac"
    assert ok.headers.get("require") == ["timer"]
    assert "timer" in ok.headers.get("supported")
    assert "UPDATE" in ok.headers.get("allow")
    bridge_rtp = media_port(ok)
    async with speaking(phone, bridge_rtp):
        await hears(phone, 5)
        refresh = await caller.reinvite(sdp(port=phone.port), headers=TIMER)
        # nothing changed: the same SDP, its o= version too (RFC 3264 §8)
        assert (refresh.status_code, refresh.body) == (200, ok.body)
        assert refresh.headers.get_first("session-expires") == "90;refresher=uac"
        assert refresh.headers.get_first("contact")
        # an UPDATE without SDP refreshes too; asked to refresh, the bridge takes it on
        # (RFC 4028 §9: the refresher the request names stays, decision 0334)
        asks = {"Supported": "timer", "Session-Expires": "1800;refresher=uas"}
        caller.send(caller.in_dialog("UPDATE", headers=asks))
        update = await caller.final("UPDATE")
        assert (update.status_code, update.body) == (200, b"")
        assert update.headers.get_first("session-expires") == "1800;refresher=uas"
        # an interval under RFC 4028's floor is refused, and the call goes on
        short = await caller.reinvite(
            sdp(port=phone.port), headers={**TIMER, "Session-Expires": "30"}
        )
        assert (short.status_code, short.headers.get_first("min-se")) == (422, "90")
        await hears(phone, 25)
        await caller.hang_up()
    call = await inbound_ended(receptionist)
    assert call["outcome"] == "far-hangup"
    saved = await transcript(receptionist, call["callId"])
    assert saved["outcome"] == "far-hangup"
    assert [turn["speaker"] for turn in saved["turns"]] == ["AI", "Caller"]


def sdp_version(message: str) -> int:
    """The version of the ``o=`` line of the bridge's SDP in ``message``."""
    found = re.search(r"^o=switchboard \d+ (\d+) ", message, re.MULTILINE)
    assert found is not None, message
    return int(found.group(1))


def cseq_of(message: str) -> str:
    found = re.search(r"^CSeq: *(.+?)\s*$", message, re.MULTILINE | re.IGNORECASE)
    return found.group(1) if found else ""


@dataclass(frozen=True)
class Traced:
    """One message of sipp's ``-trace_msg`` log."""

    at: float  # seconds, on sipp's clock
    received: bool  # False: sipp sent it
    text: str


def sipp_trace(log: Path) -> list[Traced]:
    """The messages sipp received and sent, in order, from its ``-trace_msg`` log."""
    parts = re.split(r"^-{10,} *(.*)$", log.read_text(), flags=re.MULTILINE)
    traced = []
    for stamp, chunk in zip(parts[1::2], parts[2::2], strict=True):
        head, _, text = chunk.partition("\n\n")
        at = datetime.fromisoformat(stamp.strip()).timestamp()
        traced.append(Traced(at, "message received" in head, text))
    return traced


def sipp_messages(log: Path) -> list[str]:
    """The messages sipp received, from its ``-trace_msg`` log."""
    return [message.text for message in sipp_trace(log) if message.received]


async def test_a_trunk_that_refreshes_the_session_keeps_its_call_to_the_end(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    """An outbound call: the trunk refreshes twice, and the call ends as the engine decides."""
    trace = tmp_path / "refresh-messages.log"
    sipp = await Sipp("uas_refresh.xml", bridge.ports["echo"]).start(
        tmp_path, echo=True, extra=["-trace_msg", "-message_file", str(trace)]
    )
    try:
        await platform.route("+14155550171", ["echo"])
        call_id = await platform.place("+14155550171")
        record = await platform.ended(call_id, within=45)
        assert await sipp.exit_code() == 0  # both refreshes answered, then the bridge's BYE
    finally:
        await sipp.stop()
    assert (record["status"], record["endedReason"], record["sipStatus"]) == (
        "ended-success", "finished", 200,
    )  # fmt: skip
    received = sipp_messages(trace)
    invite = next(m for m in received if m.startswith("INVITE "))
    firsts: dict[str, str] = {}  # the first 200 to each refresh (a late ACK gets it resent)
    for message in received:
        if message.startswith("SIP/2.0 200"):
            firsts.setdefault(cseq_of(message), message)
    assert list(firsts) == ["1 INVITE", "2 INVITE"], received
    answers = list(firsts.values())
    # the first answer lists only the call's codec (the offer listed two): one version up;
    # the second refresh changes nothing, and its answer is the first one again
    first, second = (sdp_version(answer) for answer in answers)
    assert (first, second) == (sdp_version(invite) + 1, first)
    assert answers[0].split("\n\n", 1)[1] == answers[1].split("\n\n", 1)[1]
    saved = await platform.http.get(f"/api.ashx/v1/transcripts/{call_id}", headers=platform.headers)
    assert saved.status_code == 200, saved.text
    assert saved.json()["outcome"] == "finished"


async def test_a_reinvite_while_another_is_pending_is_491_and_one_out_of_order_500(
    receptionist: Platform, caller: Caller, phone: Udp
) -> None:
    ok = await caller.answered(phone.port, ack=False)
    # the first INVITE's 200 awaits its ACK: a re-INVITE now crosses it (RFC 3261 14.2)
    assert (await caller.reinvite(sdp(port=phone.port))).status_code == 491
    caller.send(caller.ack(1))
    async with speaking(phone, media_port(ok)):
        first = await caller.reinvite(sdp(port=phone.port), ack=False)
        assert first.status_code == 200
        crossing = await caller.reinvite(sdp(port=phone.port, direction="sendonly"))
        assert crossing.status_code == 491
        # the first again, as a carrier resends it: its 200 again, not a 491 nor a 500
        caller.send(
            caller.wire(
                "INVITE", sdp(port=phone.port), headers={"CSeq": f"{caller.cseq - 1} INVITE"}
            )
        )
        again = await caller.final(cseq=caller.cseq - 1)
        assert (again.status_code, again.body) == (200, first.body)
        caller.send(caller.ack(caller.cseq - 1))
        assert (await caller.reinvite(sdp(port=phone.port))).status_code == 200
        # a CSeq below the dialog's last: out of order (RFC 3261 12.2.2)
        old = caller.wire("INVITE", sdp(port=phone.port), headers={"CSeq": "2 INVITE"})
        caller.send(old)
        late = await caller.final(cseq=2)
        assert (late.status_code, late.reason_phrase) == (500, "CSeq Out of Order")
        await caller.hang_up()
    assert (await inbound_ended(receptionist))["outcome"] == "far-hangup"


async def test_an_offer_without_the_calls_codec_is_488_and_the_call_goes_on(
    receptionist: Platform, caller: Caller, phone: Udp
) -> None:
    ok = await caller.answered(phone.port)
    async with speaking(phone, media_port(ok)):
        for formats in ("9 18", "8 101"):  # no G.711 at all; A-law, while the call is μ-law
            refused = await caller.reinvite(sdp(port=phone.port, formats=formats))
            assert refused.status_code == 488, formats
            assert "305" in (refused.headers.get_first("warning") or "")
        caller.send(caller.in_dialog("UPDATE", sdp(port=phone.port, formats="9")))
        assert (await caller.final("UPDATE")).status_code == 488
        await hears(phone, 25)  # the media as negotiated
        accepted = await caller.reinvite(sdp(port=phone.port))
        assert (accepted.status_code, accepted.body) == (200, ok.body)
        await caller.hang_up()
    assert (await inbound_ended(receptionist))["outcome"] == "far-hangup"


async def test_an_answer_never_acknowledged_ends_the_call_with_bye(
    bridge: Bridge, receptionist: Platform, caller: Caller, phone: Udp
) -> None:
    ok = await caller.answered(phone.port)
    moved = await Udp.open()  # the re-INVITE's Contact: the dialog's requests go there now
    try:
        async with speaking(phone, media_port(ok)):
            contact = {"Contact": f"<sip:+14155550199@127.0.0.1:{moved.port}>"}
            unacked = await caller.reinvite(sdp(port=phone.port), headers=contact, ack=False)
            assert unacked.status_code == 200
            # resent for 64*T1, then the bridge ends the call (RFC 3261 13.3.1.4)
            there = Caller(moved, caller.bridge_port)
            caller.respond(await there.request("BYE", within=30))
    finally:
        moved.close()
    call = await inbound_ended(receptionist)
    assert call["outcome"] == ""  # a technical failure, not the caller hanging up
    assert "never acknowledged the answer to its re-INVITE" in bridge.process.output()
