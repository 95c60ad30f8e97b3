"""The bridge's capacity for inbound calls: ``--max-inbound-calls`` INVITEs at once, and the
port pairs of ``--rtp-ports``; past either, an INVITE is refused 503 with ``Retry-After``
(decision 0327). The module's bridge takes 3 INVITEs at once and has 2 port pairs."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiosipua import SipMessage, SipResponse

from tests import ports
from tests.calls.helpers import events
from tests.mediabridge.conftest import BRIDGE_ONLY, Bridge, Platform
from tests.mediabridge.rawsip import Caller, Udp, sdp

pytestmark = [pytest.mark.slow, BRIDGE_ONLY]

DID = "+4930199"


@pytest.fixture(scope="module")
def bridge_options() -> list[str]:
    lo = ports.free_port(even=True, span=4)
    return ["--max-inbound-calls", "3", "--rtp-ports", f"{lo}-{lo + 4}"]


@pytest.fixture
async def callers(bridge: Bridge, platform: Platform) -> AsyncIterator[list[Caller]]:
    await platform.receptionist(DID)
    udps = [await Udp.open() for _ in range(3)]
    yield [Caller(udp, bridge.process.sip_port, did=DID) for udp in udps]
    for udp in udps:
        udp.close()


async def test_invites_past_the_bridges_capacity_are_refused_503_with_retry_after(
    bridge: Bridge, platform: Platform, callers: list[Caller]
) -> None:
    for caller in callers:
        caller.send(caller.wire("INVITE", sdp()))
    extra = Caller(callers[0].udp, bridge.process.sip_port, did=DID).wire("INVITE", sdp())
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(10)
        # Blocking on purpose: the platform answers the route questions on this test's event
        # loop, so the three INVITEs above are all still waiting for it when the fourth comes
        sock.sendto(extra, ("127.0.0.1", bridge.process.sip_port))
        refused = SipMessage.parse(sock.recv(4000))
    assert isinstance(refused, SipResponse)
    assert (refused.status_code, refused.headers.get_first("retry-after")) == (503, "5")
    # the three get their answers: two take the two port pairs, the third finds none left
    finals = [await caller.final() for caller in callers]
    assert sorted(f.status_code for f in finals) == [200, 200, 503]
    busy = next(f for f in finals if f.status_code == 503)
    assert busy.headers.get_first("retry-after") == "5"
    for caller, final in zip(callers, finals, strict=True):
        if final.status_code == 200:
            caller.to_tag = (final.headers.get_first("to") or "").split("tag=", 1)[1]
            caller.send(caller.wire("ACK"))
            caller.send(caller.in_dialog("BYE"))
            assert (await caller.final("BYE")).status_code == 200
    # once those calls are over, the bridge takes calls again
    again = callers[2]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while True:
        again.call_id, again.to_tag = f"again-{loop.time()}", ""
        again.send(again.wire("INVITE", sdp()))
        answer = await again.final()
        if answer.status_code == 200:
            break
        assert answer.status_code == 503
        assert loop.time() < deadline, "the bridge did not take calls again"
        await asyncio.sleep(0.1)
    again.to_tag = (answer.headers.get_first("to") or "").split("tag=", 1)[1]
    again.send(again.wire("ACK"))
    again.send(again.in_dialog("BYE"))
    assert (await again.final("BYE")).status_code == 200
    output = bridge.process.output()
    assert "inbound call refused 503" in output
    assert "ERROR" not in output
    # the three calls' ends reach the platform before their slots are free: the module's bridge
    # serves the next test with none taken
    while sum(name == "call.ended" for name, _ in await events(platform.runtime)) < 3:
        assert loop.time() < deadline + 30, await events(platform.runtime)
        await asyncio.sleep(0.05)
