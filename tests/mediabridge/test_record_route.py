"""The route set of a dialog whose INVITE came through proxies that record-routed it (RFC 3261
§12, decision 0330), at the edges sipp does not reach: a proxy whose name does not resolve, a
strict router, a target refresh behind a proxy; and host names looked up. The caller's Contact
names a port nobody listens at, so the bridge's BYE (the caller sends no media: the module's
bridge hangs up after 1 s) reaches the caller's socket only by the route. Loose routing through
addresses is in test_inbound.py and test_outcomes.py, with sipp."""

from __future__ import annotations

import pytest

from tests.mediabridge.conftest import BRIDGE_ONLY, Platform
from tests.mediabridge.rawsip import Caller, Udp, sdp
from tests.mediabridge.test_inbound import inbound_ended

pytestmark = [pytest.mark.slow, BRIDGE_ONLY]

DID = "+4930177"
RTP_TIMEOUT_SEC = 1
UNREACHABLE = "<sip:+14155550199@127.0.0.1:9>"  # the discard port: nobody answers there


@pytest.fixture(scope="module")
def bridge_options() -> list[str]:
    return ["--rtp-timeout-sec", str(RTP_TIMEOUT_SEC)]


async def test_a_proxy_whose_name_does_not_resolve_is_reached_where_the_invite_came_from(
    receptionist: Platform, caller: Caller, phone: Udp
) -> None:
    """The nearest proxy is the one that sent the bridge the INVITE."""
    route = "<sip:edge.proxy.invalid;lr;x-sb=edge>"
    ok = await caller.answered(phone.port, headers={"Record-Route": route, "Contact": UNREACHABLE})
    assert ok.headers.get("record-route") == [route]  # repeated in the 200
    bye = await caller.request("BYE", within=30)
    caller.respond(bye)
    assert bye.uri == "sip:+14155550199@127.0.0.1:9"  # the remote target
    assert bye.headers.get("route") == [route]
    assert (await inbound_ended(receptionist))["outcome"] == ""  # the media timed out


async def test_a_strict_router_gets_its_own_uri_and_the_target_last(
    receptionist: Platform, caller: Caller, phone: Udp
) -> None:
    strict = f"sip:127.0.0.1:{caller.udp.port};x-sb=strict"  # no lr: RFC 2543 routing
    ok = await caller.answered(
        phone.port, headers={"Record-Route": f"<{strict}>", "Contact": UNREACHABLE}
    )
    assert ok.headers.get("record-route") == [f"<{strict}>"]
    bye = await caller.request("BYE", within=30)
    caller.respond(bye)
    assert bye.uri == strict
    assert bye.headers.get("route") == ["<sip:+14155550199@127.0.0.1:9>"]
    await inbound_ended(receptionist)


async def test_a_target_refresh_behind_a_proxy_changes_the_uri_not_the_next_hop(
    receptionist: Platform, caller: Caller, phone: Udp
) -> None:
    proxy = f"<sip:127.0.0.1:{caller.udp.port};lr;x-sb=edge>"
    await caller.answered(phone.port, headers={"Record-Route": proxy, "Contact": UNREACHABLE})
    moved = "<sip:+14155550199@127.0.0.1:7>"  # a new Contact, also unreachable
    refreshed = await caller.reinvite(
        sdp(port=phone.port), headers={"Record-Route": proxy, "Contact": moved}
    )
    assert refreshed.status_code == 200
    bye = await caller.request("BYE", within=30)
    caller.respond(bye)
    assert bye.uri == "sip:+14155550199@127.0.0.1:7"
    assert bye.headers.get("route") == [proxy]
    await inbound_ended(receptionist)


@pytest.mark.parametrize("routed", [False, True], ids=["contact", "route"])
async def test_a_host_name_is_looked_up_and_its_address_used(
    receptionist: Platform, caller: Caller, phone: Udp, routed: bool
) -> None:
    """A Contact's or a proxy's host name (``localhost``) is looked up (off the event loop) and
    the BYE goes to its address: to a socket of its own, not where the INVITE came from."""
    there = await Udp.open()
    try:
        named = f"<sip:+14155550199@localhost:{there.port}>"
        headers = (
            {"Record-Route": f"<sip:localhost:{there.port};lr>", "Contact": UNREACHABLE}
            if routed
            else {"Contact": named}
        )
        await caller.answered(phone.port, headers=headers)
        bye = await Caller(there, caller.bridge_port).request("BYE", within=30)
        caller.respond(bye)
        assert bye.uri == ("sip:+14155550199@127.0.0.1:9" if routed else named[1:-1])
    finally:
        there.close()
    await inbound_ended(receptionist)
