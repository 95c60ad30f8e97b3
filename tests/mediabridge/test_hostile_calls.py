"""Answered calls under a misbehaving far end or a third party: RTP from another host, media
that stops, a CANCEL that crosses the platform's answer, a 2xx never acknowledged, requests in
the dialog the bridge does not take (decisions 0325 and 0326). The module's bridge hangs up a
call whose far end sends no media for 1 s (``--rtp-timeout-sec``)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path

import pytest

from tests.mediabridge.components import Sipp
from tests.mediabridge.conftest import BRIDGE_ONLY, Bridge, Platform
from tests.mediabridge.rawsip import Caller, Udp, media_port, sdp, speaking, until

pytestmark = [pytest.mark.slow, BRIDGE_ONLY]

DID = "+4930188"
RTP_TIMEOUT_SEC = 1
T1 = 0.05  # the tests' --sip-t1-ms


@pytest.fixture(scope="module")
def bridge_options() -> list[str]:
    return ["--rtp-timeout-sec", str(RTP_TIMEOUT_SEC)]


async def test_rtp_from_another_host_is_ignored(
    bridge: Bridge, receptionist: Platform, caller: Caller, phone: Udp
) -> None:
    bridge_rtp = media_port(await caller.answered(phone.port))
    intruder = await Udp.open("127.0.0.2")
    try:
        async with speaking(phone, bridge_rtp):
            await until(lambda: phone.received >= 5)
            async with speaking(intruder, bridge_rtp):
                heard = phone.received
                # with symmetric RTP latching on to any source, the bridge's audio would follow
                # the intruder's packets; it keeps going to the caller's phone instead
                await until(lambda: phone.received >= heard + 25)
            caller.send(caller.in_dialog("BYE"))
            assert (await caller.final("BYE")).status_code == 200
    finally:
        intruder.close()
    assert intruder.received == 0
    assert "media from 127.0.0.2:" in bridge.process.output()


async def test_a_far_end_that_stops_sending_media_is_hung_up_as_a_technical_failure(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    """The trunk answers and sends no RTP at all (sipp without its echo): the bridge hangs up
    after 1 s without media instead of letting the call run on to the engine's end."""
    sipp = await Sipp("uas_echo.xml", bridge.ports["echo"]).start(
        tmp_path, keys={"codec": "0"}, extra=["-mi", "127.0.0.1"]
    )
    try:
        await platform.route("+14155550161", ["echo"])
        call_id = await platform.place("+14155550161")
        record = await platform.ended(call_id, within=45)
        assert await sipp.exit_code() == 0  # the bridge's BYE ended sipp's scenario
    finally:
        await sipp.stop()
    assert (record["status"], record["endedReason"], record["sipStatus"]) == (
        "ended-failed-final", "", 200
    )  # fmt: skip
    assert record["errorDetail"] == f"the far end sent no media for {RTP_TIMEOUT_SEC} s"
    assert record["answeredAtUtc"]


def first_lines(sock: socket.socket, count: int) -> list[str]:
    return [sock.recv(4000).split(b"\r\n", 1)[0].decode() for _ in range(count)]


async def test_a_cancel_that_crosses_the_platforms_answer_is_the_end_of_the_call(
    receptionist: Platform, caller: Caller
) -> None:
    via = caller.headers("INVITE")["Via"]  # a CANCEL and a non-2xx's ACK share the INVITE's
    invite = caller.wire("INVITE", sdp(), headers={"Via": via})
    cancel = caller.wire("CANCEL", headers={"Via": via})
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(10)
        # Blocking calls on purpose: the platform serves the bridge's route question on this
        # test's event loop, so it cannot answer before the CANCEL has crossed it.
        sock.sendto(invite, ("127.0.0.1", caller.bridge_port))
        assert first_lines(sock, 1) == ["SIP/2.0 100 Trying"]
        sock.sendto(cancel, ("127.0.0.1", caller.bridge_port))
        assert first_lines(sock, 2) == ["SIP/2.0 200 OK", "SIP/2.0 487 Request Terminated"]
        sock.sendto(caller.wire("ACK", headers={"Via": via}), ("127.0.0.1", caller.bridge_port))
        # Now the platform answers; the bridge, whose INVITE is over, answers it no more (a 2xx
        # would come at once and again every T1 to 4 s)
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        late = b""
        with contextlib.suppress(TimeoutError):
            late = await asyncio.wait_for(loop.sock_recv(sock, 4000), 2 * 64 * T1)
        assert late == b""


async def test_a_2xx_that_is_never_acknowledged_is_followed_by_bye(
    receptionist: Platform, caller: Caller
) -> None:
    caller.send(caller.wire("INVITE", sdp()))
    ok = await caller.final()
    assert ok.status_code == 200
    # no ACK: the 200 is resent for 64*T1, then the bridge ends the dialog (RFC 3261 13.3.1.4)
    bye = await caller.request("BYE", within=30)
    assert bye.call_id == caller.call_id
    caller.respond(bye)


async def test_requests_in_the_dialog_the_bridge_does_not_take(
    receptionist: Platform, caller: Caller, phone: Udp
) -> None:
    bridge_rtp = media_port(await caller.answered(phone.port))
    allow = "INVITE, ACK, BYE, CANCEL, OPTIONS, NOTIFY, INFO, UPDATE"
    async with speaking(phone, bridge_rtp):
        for method, status in (("REFER", 405), ("FOO", 501), ("INFO", 200)):
            caller.send(caller.in_dialog(method))
            answer = await caller.final(method)
            assert answer.status_code == status, method
            if status in (405, 501):
                assert ", ".join(answer.headers.get("allow")) == allow
        caller.send(caller.in_dialog("OPTIONS"))
        assert ", ".join((await caller.final("OPTIONS")).headers.get("allow")) == allow
        # the dialog's Call-ID with a To tag that is not the bridge's: someone else's BYE
        theirs = caller.to_tag
        caller.to_tag = "not-the-bridges"
        caller.send(caller.in_dialog("BYE"))
        assert (await caller.final("BYE")).status_code == 481
        caller.to_tag = theirs
        caller.send(caller.in_dialog("BYE"))
        assert (await caller.final("BYE")).status_code == 200
