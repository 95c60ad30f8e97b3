"""Inbound SIP calls: sipp dials a DID at the bridge; the platform's inbound route decides."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from aiosipua import SipResponse

from switchboard.identity import service as identity
from switchboard.platform.numbers import service as numbers
from tests import ports
from tests.calls.helpers import events
from tests.conftest import PRIMARY_HOST
from tests.mediabridge.components import BridgeProcess, Sipp, free_port
from tests.mediabridge.conftest import Bridge, Platform
from tests.mediabridge.rawsip import Caller, Udp, sdp

pytestmark = pytest.mark.slow

DID = "+4930100"


async def inbound_call(
    bridge: Bridge, workdir: Path, scenario: str, did: str, domain: str = "127.0.0.1"
) -> int:
    """``domain`` is the request URI's host (a carrier usually sends the bridge's address)."""
    media = ports.free_port(even=True, span=4)
    args = ["-s", did, "-mi", "127.0.0.1", "-mp", str(media), "-key", "domain", domain]
    sipp = await Sipp(scenario, free_port()).start(
        workdir, extra=[*args, f"127.0.0.1:{bridge.process.sip_port}"]
    )
    try:
        return await sipp.exit_code(within=40)
    finally:
        await sipp.stop()


async def users_phone(platform: Platform) -> int:
    """The port of the admin's phone, the user an office-tab route rings."""
    port = free_port()
    async with platform.runtime.db.transaction() as session:
        await identity.set_sip_uri(
            session, tenant_id=platform.tenant_id, username="admin",
            uri=f"sip:admin@127.0.0.1:{port}",
        )  # fmt: skip
    return port


async def wait_for_event(platform: Platform, name: str, within: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while name not in [n for n, _ in await events(platform.runtime)]:
        assert loop.time() < deadline, await events(platform.runtime)
        await asyncio.sleep(0.1)


def inbound_events(found: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The inbound calls' events; their ids are ``vnum-`` and 12 hex digits (spec 2.6)."""
    calls = [(n, d) for n, d in found if str(d.get("callId", "")).startswith("vnum-")]
    assert all(re.fullmatch(r"vnum-[0-9a-f]{12}", str(d["callId"])) for _, d in calls), calls
    return calls


async def inbound_ended(platform: Platform) -> dict[str, Any]:
    """The ``call.ended`` event of the (one) inbound call."""
    await wait_for_event(platform, "call.ended")
    found = inbound_events(await events(platform.runtime))
    return next(data for name, data in found if name == "call.ended")


async def refusal(bridge_port: int) -> SipResponse:
    """The final answer of the bridge at ``bridge_port`` to an INVITE of the module's DID."""
    udp = await Udp.open()
    try:
        caller = Caller(udp, bridge_port, did=DID)
        caller.send(caller.wire("INVITE", sdp()))
        return await caller.final()
    finally:
        udp.close()


async def test_a_did_with_a_virtual_number_reaches_the_receptionist(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    async with platform.runtime.db.transaction() as session:
        await numbers.create_number(
            session, tenant_id=platform.tenant_id, name="Front desk", number=DID,
            voice="Kore", language="de-DE", api_key="desk-ai-key",
            system_prompt="You are the front desk.", box=platform.runtime.box,
            clock=platform.runtime.clock,
        )  # fmt: skip
    assert await inbound_call(bridge, tmp_path, "uac_inbound.xml", DID) == 0
    await wait_for_event(platform, "call.ended")
    found = inbound_events(await events(platform.runtime))
    names = [name for name, _ in found]
    assert names[:3] == ["call.answered", "call.started", "call.ended"], names
    answered, started, ended = (data for _, data in found[:3])
    assert (answered["did"], answered["fromNumber"], answered["direction"]) == (
        DID, "+14155550199", "inbound"
    )  # fmt: skip
    assert started["did"] == DID
    assert (ended["source"], ended["outcome"]) == ("sip", "far-hangup")
    assert "desk-ai-key" not in bridge.process.output()
    assert "no --platform-url" not in bridge.process.output()


async def test_a_did_with_no_route_is_refused_404_and_reported_nowhere(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    assert await inbound_call(bridge, tmp_path, "uac_inbound_refused.xml", "+4930999") == 0
    await asyncio.sleep(0.3)
    assert inbound_events(await events(platform.runtime)) == []


async def test_an_office_tab_route_rings_the_users_phone_and_bridges_the_media(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    phone_port = await users_phone(platform)
    phone = await Sipp("uas_echo.xml", phone_port).start(tmp_path, keys={"codec": "0"}, echo=True)
    try:
        code = await inbound_call(
            bridge, tmp_path, "uac_inbound.xml", "+4930200", domain=PRIMARY_HOST
        )
        assert code == 0
        assert await phone.exit_code() == 0  # the user's phone answered and got the BYE
    finally:
        await phone.stop()
    await wait_for_event(platform, "call.ended")
    found = inbound_events(await events(platform.runtime))
    assert [name for name, _ in found][:2] == ["call.answered", "call.ended"]
    assert found[1][1]["outcome"] == "far-hangup"


async def test_a_proxy_that_record_routes_the_call_stays_on_its_path(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    """The caller's INVITE came through a proxy that record-routed it, and the caller's Contact
    names a port nobody listens at: the bridge's 200 names the proxy again, and its BYE (the
    user's phone hung up) goes to the proxy with the route in a Route header (the scenario
    checks both; without them it fails)."""
    phone_port = await users_phone(platform)
    phone = await Sipp("uas_answer_bye.xml", phone_port).start(tmp_path, echo=True)
    try:
        code = await inbound_call(
            bridge, tmp_path, "uac_inbound_routed.xml", "+4930200", domain=PRIMARY_HOST
        )
        assert code == 0
        assert await phone.exit_code() == 0  # the phone answered, hung up, had its BYE answered
    finally:
        await phone.stop()
    await wait_for_event(platform, "call.ended")


async def test_a_hold_of_the_caller_is_passed_on_to_the_users_phone(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    """The caller holds the relayed call and resumes it: the bridge answers the caller and
    offers the phone the same (its scenario checks a=sendonly, then a=sendrecv)."""
    phone_port = await users_phone(platform)
    phone = await Sipp("uas_held_by_relay.xml", phone_port).start(tmp_path, echo=True)
    udp, media = await Udp.open(), await Udp.open()
    try:
        caller = Caller(udp, bridge.process.sip_port, did="+4930200")
        line = f"INVITE sip:+4930200@{PRIMARY_HOST} SIP/2.0"
        caller.send(caller.wire("INVITE", sdp(port=media.port), line=line))
        answered = await caller.final(within=30)
        assert answered.status_code == 200
        caller.to_tag = (answered.headers.get_first("to") or "").split("tag=", 1)[1]
        caller.send(caller.wire("ACK"))
        for offered, passed_on in (("sendonly", "sendonly passed on"), ("", "sendrecv passed on")):
            answer = await caller.reinvite(sdp(port=media.port, direction=offered))
            assert answer.status_code == 200
            await until_logged(bridge, passed_on)
        await caller.hang_up()
        assert await phone.exit_code() == 0
    finally:
        await phone.stop()
        udp.close()
        media.close()


async def until_logged(bridge: Bridge, text: str, within: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while text not in bridge.process.output():
        assert loop.time() < deadline, bridge.process.output()[-2000:]
        await asyncio.sleep(0.05)


async def test_a_call_to_the_registered_contact_is_routed_by_the_number_in_to(
    platform: Platform, tmp_path: Path
) -> None:
    """A trunk the bridge registers at sends its calls to the registered contact: the request
    URI names the account, To the number dialled, and the route is the number's. A bridge of
    its own, whose trunk registers as ``acct`` (at a port nobody answers: the registration's
    fate does not matter here)."""
    did = "+4930188"
    async with platform.runtime.db.transaction() as session:
        await numbers.create_number(
            session, tenant_id=platform.tenant_id, name="Desk", number=did, voice="Kore",
            language="de-DE", api_key="desk-ai-key", system_prompt="You are the front desk.",
            box=platform.runtime.box, clock=platform.runtime.clock,
        )  # fmt: skip
    trunks = tmp_path / "trunks.toml"
    trunks.write_text(
        f'[trunks.carrier]\nuri = "sip:127.0.0.1:{free_port()}"\nusername = "acct"\n'
        'password_env = "TEST_TRUNK_PASSWORD"\nregister = true\n'
    )
    registered = BridgeProcess(trunks=trunks, env={"TEST_TRUNK_PASSWORD": "p"})
    await asyncio.to_thread(registered.start, tmp_path, platform.url)
    try:
        media = ports.free_port(even=True, span=4)
        caller = await Sipp("uac_inbound_registered.xml", free_port()).start(
            tmp_path,
            extra=[
                "-s", did, "-mi", "127.0.0.1", "-mp", str(media), "-key", "domain", "127.0.0.1",
                "-key", "account", "acct", f"127.0.0.1:{registered.sip_port}",
            ],
        )  # fmt: skip
        try:
            assert await caller.exit_code(within=40) == 0
        finally:
            await caller.stop()
        ended = await inbound_ended(platform)  # reported by the bridge, so before it stops
    finally:
        registered.kill()
    assert (ended["source"], ended["outcome"]) == ("sip", "far-hangup")
    answered = dict(inbound_events(await events(platform.runtime)))["call.answered"]
    assert answered["did"] == did


async def test_an_unreachable_platform_gets_the_caller_503_with_retry_after(
    bridge: Bridge,
) -> None:
    """Nothing listens at the module's platform address (this test starts no platform): a
    passing fault, which the carrier may route around and come back to (decision 0328)."""
    refused = await refusal(bridge.process.sip_port)
    assert (refused.status_code, refused.headers.get_first("retry-after")) == (503, "5")
    assert "refused 503: the platform is unreachable" in bridge.process.output()


async def test_a_platform_that_refuses_the_question_gets_the_caller_500(
    bridge: Bridge, platform: Platform, tmp_path: Path
) -> None:
    """A bridge whose secret is not the platform's: the platform answers 401, a fault of this
    deployment that no retry mends (decision 0328)."""
    await platform.receptionist(DID)
    env = {**bridge.process.env, "SWITCHBOARD_BRIDGE_SECRET": "not-the-platforms"}
    wrong = BridgeProcess(trunks=bridge.process.trunks, env=env)
    await asyncio.to_thread(wrong.start, tmp_path, platform_url=platform.url)
    try:
        refused = await refusal(wrong.sip_port)
    finally:
        wrong.kill()
    assert (refused.status_code, refused.headers.get_first("retry-after")) == (500, None)
    assert "refused 500: the platform answered HTTP 401" in wrong.output()
    assert inbound_events(await events(platform.runtime)) == []
