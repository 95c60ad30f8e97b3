"""A carrier holds the call and resumes it, or moves its media, by re-INVITE or UPDATE: the
bridge answers in the direction that answers the offer, sends nothing while held, does not hang
up a held call for its silence, and sends its audio wherever the far end's SDP now says
(decision 0328). The module's bridge hangs up a call whose far end sends no media for 1 s
(``--rtp-timeout-sec``), so a hold longer than that proves the timeout waits."""

from __future__ import annotations

import asyncio
import re

import pytest
from aiosipua import SipResponse

from tests.mediabridge.conftest import BRIDGE_ONLY, Bridge, Platform
from tests.mediabridge.rawsip import Caller, Udp, hears, media_port, sdp, speaking
from tests.mediabridge.test_inbound import inbound_ended

pytestmark = [pytest.mark.slow, BRIDGE_ONLY]

DID = "+4930167"
RTP_TIMEOUT_SEC = 1
# what the bridge sent before its answer may still be on its way when the answer lands
IN_FLIGHT_SEC = 0.1


@pytest.fixture(scope="module")
def bridge_options() -> list[str]:
    return ["--rtp-timeout-sec", str(RTP_TIMEOUT_SEC)]


def version(answer: SipResponse) -> int:
    found = re.search(r"^o=switchboard \d+ (\d+) ", answer.body.decode(), re.MULTILINE)
    assert found is not None, answer.body
    return int(found.group(1))


def direction(answer: SipResponse) -> str:
    found = re.search(r"^a=(sendrecv|sendonly|recvonly|inactive)\s*$", answer.body.decode(), re.M)
    assert found is not None, answer.body
    return found.group(1)


async def nothing_sent(phone: Udp, seconds: float) -> None:
    """The bridge sends the phone no RTP for ``seconds``."""
    await asyncio.sleep(IN_FLIGHT_SEC)
    before = phone.received
    await asyncio.sleep(seconds)
    assert phone.received == before


async def offer(caller: Caller, method: str, body: str) -> SipResponse:
    """A new offer in a re-INVITE (acknowledged) or an UPDATE, and its final answer."""
    if method == "INVITE":
        return await caller.reinvite(body)
    caller.send(caller.in_dialog(method, body))
    return await caller.final(method)


@pytest.mark.parametrize(
    ("method", "held_by", "answered"),
    [
        pytest.param("INVITE", {"direction": "sendonly"}, "recvonly", id="reinvite-sendonly"),
        pytest.param("UPDATE", {"direction": "sendonly"}, "recvonly", id="update-sendonly"),
        pytest.param("INVITE", {"direction": "inactive"}, "inactive", id="reinvite-inactive"),
        # older gear holds with a connection address of 0.0.0.0 (RFC 3264 8.4)
        pytest.param("INVITE", {"host": "0.0.0.0"}, "recvonly", id="reinvite-0.0.0.0"),
    ],
)
async def test_hold_and_resume(
    receptionist: Platform, caller: Caller, phone: Udp, method: str, held_by: dict[str, str],
    answered: str,
) -> None:  # fmt: skip
    ok = await caller.answered(phone.port)
    bridge_rtp, first = media_port(ok), version(ok)
    async with speaking(phone, bridge_rtp):
        await hears(phone, 5)
        held = await offer(caller, method, sdp(port=phone.port, **held_by))
    assert (held.status_code, direction(held), version(held)) == (200, answered, first + 1)
    assert media_port(held) == bridge_rtp
    assert held.headers.get_first("contact")
    caller.send(caller.in_dialog("UPDATE"))  # no SDP: a session refresh, and the hold goes on
    refresh = await caller.final("UPDATE")
    assert (refresh.status_code, refresh.body) == (200, b"")
    # the held phone sends nothing, longer than the RTP timeout: the call stays, and silent
    await nothing_sent(phone, RTP_TIMEOUT_SEC + 1)
    assert caller.udp.protocol.queue.empty()  # no BYE came
    async with speaking(phone, bridge_rtp):
        resumed = await offer(caller, method, sdp(port=phone.port))
        assert (resumed.status_code, direction(resumed), version(resumed)) == (
            200, "sendrecv", first + 2,
        )  # fmt: skip
        await hears(phone, 10)  # at the phone's own address, after a hold by 0.0.0.0 too
        await caller.hang_up()
    assert (await inbound_ended(receptionist))["outcome"] == "far-hangup"


async def test_media_moved_to_another_address_is_followed(
    bridge: Bridge, receptionist: Platform, caller: Caller, phone: Udp
) -> None:
    """A carrier's media server fails over: the new SDP names another host and port."""
    ok = await caller.answered(phone.port)
    bridge_rtp = media_port(ok)
    moved = await Udp.open("127.0.0.2")
    try:
        async with speaking(phone, bridge_rtp):
            await hears(phone, 5)
            answer = await caller.reinvite(sdp(host="127.0.0.2", port=moved.port))
        # the bridge's side of the session did not change: the same SDP, the same version
        assert (answer.status_code, answer.body) == (200, ok.body)
        async with speaking(moved, bridge_rtp):
            await hears(moved, 25)
            await nothing_sent(phone, 0.3)
            await caller.hang_up()
    finally:
        moved.close()
    # the new address is the call's: its packets were taken, not ignored (decision 0326)
    assert "media from 127.0.0.2:" not in bridge.process.output()
    assert (await inbound_ended(receptionist))["outcome"] == "far-hangup"


async def test_a_reinvite_without_sdp_gets_an_offer_and_its_answer_comes_in_the_ack(
    receptionist: Platform, caller: Caller, phone: Udp
) -> None:
    ok = await caller.answered(phone.port)
    bridge_rtp = media_port(ok)
    moved = await Udp.open()
    try:
        async with speaking(phone, bridge_rtp):
            await hears(phone, 5)
            offer = await caller.reinvite(ack=False)
            assert (offer.status_code, media_port(offer), direction(offer)) == (
                200, bridge_rtp, "sendrecv",
            )  # fmt: skip
            assert re.search(r"^m=audio \d+ RTP/AVP 0 101\s*$", offer.body.decode(), re.M)
            # the answer, in the ACK, moves the media to another port (RFC 3261 14.2)
            caller.send(caller.wire("ACK", sdp(port=moved.port, formats="0 101")))
        async with speaking(moved, bridge_rtp):
            await hears(moved, 25)
            await caller.hang_up()
    finally:
        moved.close()
    assert (await inbound_ended(receptionist))["outcome"] == "far-hangup"
