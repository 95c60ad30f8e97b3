"""A browser's call to a virtual number: a peer joins a room with ``call``, the platform asks
the real bridge for the number's AI peer, which joins over signaling with its join token and
talks (tone engine) with a caller speaking espeak-ng speech; the call's events reach a real
webhook receiver."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from switchboard.kit.clock import ManualClock
from switchboard.mediabridge.engines.speech import espeak_voice, synthesize
from switchboard.platform.numbers import service as numbers
from switchboard.platform.rooms import vnum
from switchboard.platform.rooms.simpeer import RoomPeer
from switchboard.runtime import Runtime
from tests import factories
from tests.browser import ARGS, CHROMIUM, needs_chromium
from tests.mediabridge.components import BridgeProcess
from tests.mediabridge.rooms.test_ai_peer import SpeechTrack
from tests.rooms.conftest import Client, Server
from tests.rooms.peers import call_connected, media_arrives
from tests.rooms.test_browser import INBOUND_BYTES, MEDIA_ARGS, TRACK_PCS
from tests.rooms.test_sfu_janus import bridge
from tests.webhooks.conftest import Receiver, deliver_until, subscribe

__all__ = ["bridge"]

pytestmark = pytest.mark.slow
NUMBER = "+4930555010"


async def delivered(runtime: Runtime, receiver: Receiver, event: str) -> list[dict[str, Any]]:
    """Send what is due until ``event`` arrived; every event received."""
    return await deliver_until(
        runtime, receiver, lambda bodies: any(e["event"] == event for e in bodies)
    )


def finished(events: list[dict[str, Any]], call_id: str, number: str = NUMBER) -> dict[str, Any]:
    """The ``call.ended`` of a finished call from room ``desk``, with its ``transcript.saved``."""
    ended: dict[str, Any]
    [ended] = [e["data"] for e in events if e["event"] == "call.ended"]
    assert ended == {
        "callId": call_id, "number": number, "room": "desk", "outcome": "finished",
        "durationSec": ended["durationSec"], "tokens": ended["tokens"], "source": "vnum",
    }  # fmt: skip
    [saved] = [e["data"] for e in events if e["event"] == "transcript.saved"]
    assert saved == {"callId": call_id, "number": number, "file": saved["file"],
                     "outcome": "finished", "source": "vnum"}  # fmt: skip
    return ended


async def test_a_peer_calls_a_virtual_number_and_its_ai_answers(
    server: Server, bridge: BridgeProcess, runtime: Runtime, receiver: Receiver
) -> None:
    host = f"127.0.0.1:{server.port}"  # the AI peer reaches the room on the caller's host
    meet = await factories.tenant(runtime, "meet", [host])
    await subscribe(runtime, meet, receiver.url("/hook"))
    runtime.settings = runtime.settings.model_copy(
        update={"public_base_url": f"http://{host}", "room_max_message_bytes": 64 * 1024}
    )
    async with runtime.db.transaction() as session:
        await numbers.create_number(
            session, tenant_id=meet.id, name="Front desk", number=NUMBER, voice="Kore",
            language="en-US", api_key="desk-ai-key", system_prompt="You are the front desk.",
            box=runtime.box, clock=runtime.clock,
        )  # fmt: skip
    speech = await synthesize("Hello, I would like to book a table.", espeak_voice("en", ""))
    caller = RoomPeer(await server.peer(host, "desk"), "Ann", SpeechTrack(speech))
    try:
        ai = await call_connected(caller, NUMBER)
        await media_arrives(ai)  # the AI's voice comes in
        events = await delivered(runtime, receiver, "call.started")
        [joined_ai] = [e["data"] for e in events if e["event"] == "room.peer.joined"
                       and e["data"]["role"] == "ai-vnum"]  # fmt: skip
        assert joined_ai["verified"] is True
        assert joined_ai["name"] == "Front desk"
        [started] = [e["data"] for e in events if e["event"] == "call.started"]
        assert started == {"callId": started["callId"], "number": NUMBER, "room": "desk",
                           "direction": "inbound", "source": "vnum"}  # fmt: skip
        assert caller.errors == []
        # the caller speaks; the tone engine answers once and ends the call
        events = await delivered(runtime, receiver, "transcript.saved")
    finally:
        await caller.close()
    ended = finished(events, started["callId"])
    assert ended["durationSec"] >= 2


async def test_join_tokens_open_their_room_only_and_expire(
    server: Server, runtime: Runtime, clock: ManualClock
) -> None:
    host = f"127.0.0.1:{server.port}"
    meet = await factories.tenant(runtime, "meet", [host])

    async def join(token: str) -> Client:
        peer = Client(await server.peer(host, "desk"))
        await peer.send(type="join", name="AI", role="ai-vnum", token=token)
        return peer

    good = vnum.join_token(runtime, vnum.JoinGrant(meet.id, "desk", "vnum-1"))
    other_room = vnum.join_token(runtime, vnum.JoinGrant(meet.id, "lobby", "vnum-1"))
    body, _, mac = good.rpartition(".")
    for bad in ("rjt.e30.00", other_room, f"{body}.{'0' * len(mac)}"):
        refused = await join(bad)
        await refused.ws.wait_closed()
        assert refused.ws.close_code == 1008
        assert refused.ws.close_reason == "the join token is not valid for this room"
    welcome = await (await join(good)).expect("welcome")
    assert welcome["room"] == "desk"
    clock.advance(vnum.TOKEN_TTL_SEC + 1)
    late = await join(good)
    await late.ws.wait_closed()
    assert late.ws.close_code == 1008


@needs_chromium
async def test_the_room_page_calls_a_virtual_number(
    server: Server, bridge: BridgeProcess, runtime: Runtime, receiver: Receiver
) -> None:
    await the_room_page_calls(server, runtime, receiver)


async def the_room_page_calls(server: Server, runtime: Runtime, receiver: Receiver) -> None:
    """A person opens ``/rooms/desk?call=<number>`` in Chromium (fake camera and microphone),
    sees the AI's tile and hears it, then leaves: the call starts and ends."""
    from playwright.async_api import async_playwright, expect

    host = f"127.0.0.1:{server.port}"  # a loopback origin is a secure context (getUserMedia)
    meet = await factories.tenant(runtime, "meet", [host])
    await subscribe(runtime, meet, receiver.url("/hook"))
    runtime.settings = runtime.settings.model_copy(update={
        "public_base_url": f"http://{host}", "room_max_message_bytes": 64 * 1024,
        "room_max_messages_per_second": 200,
    })  # fmt: skip
    async with runtime.db.transaction() as session:
        await numbers.create_number(
            session, tenant_id=meet.id, name="Front desk", number=NUMBER, voice="Kore",
            language="en-US", api_key="desk-ai-key", system_prompt="You are the front desk.",
            box=runtime.box, clock=runtime.clock,
        )  # fmt: skip
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS + MEDIA_ARGS)
        try:
            page = await browser.new_page()
            await page.add_init_script(TRACK_PCS)
            await page.goto(f"http://{host}/rooms/desk?call={NUMBER.replace('+', '%2B')}")
            await page.fill("#name", "Ann")
            await page.click("text=Join with camera and microphone")
            await expect(page.locator("#tiles video")).to_have_count(2, timeout=15_000)
            captions = await page.locator("figcaption").all_text_contents()
            assert sorted(captions) == ["Ann (you)", "Front desk"]
            before = await page.evaluate(INBOUND_BYTES)
            async with asyncio.timeout(15):
                while await page.evaluate(INBOUND_BYTES) <= before:  # noqa: ASYNC110 (polled)
                    await asyncio.sleep(0.2)  # the AI's voice reaches the page
            events = await delivered(runtime, receiver, "call.started")
            [started] = [e["data"] for e in events if e["event"] == "call.started"]
            assert (started["number"], started["room"]) == (NUMBER, "desk")
            assert started["source"] == "vnum"
            await page.click("#leave")
            events = await delivered(runtime, receiver, "call.ended")
            [ended] = [e["data"] for e in events if e["event"] == "call.ended"]
            assert ended["callId"] == started["callId"]
        finally:
            await browser.close()
