"""A browser's call to a virtual number on the built-in simulated bridge (the default bridge):
its AI peer, a real aiortc peer, joins the room over signaling with its join token, connects to
the caller (an aiortc room peer) and sends its tone while the simulator's scripted inbound
conversation plays; the call's events reach a real webhook receiver."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.platform.numbers import service as numbers
from switchboard.platform.rooms.simpeer import RoomPeer
from switchboard.runtime import Runtime
from tests import factories
from tests.browser import needs_chromium
from tests.rooms.conftest import Client, Server
from tests.rooms.peers import call_connected, media_arrives, until
from tests.rooms.test_vnum_call import delivered, finished, the_room_page_calls
from tests.webhooks.conftest import Receiver, subscribe

pytestmark = pytest.mark.slow
NUMBER = "+4930555020"
SPEED = 4.0  # the scripted conversation (about 21 s) plays in about 5 s
SCRIPT_SEC = 21  # its length on the simulator's timeline


class Caller(RoomPeer):
    """The room peer, noting who joins and leaves after it."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.joined: list[dict[str, Any]] = []
        self.left: list[str] = []

    async def on_peer_joined(self, message: dict[str, Any]) -> None:
        self.joined.append(message["peer"])

    async def on_peer_left(self, message: dict[str, Any]) -> None:
        self.left.append(message["peerId"])


async def front_desk(
    server: Server, runtime: Runtime, receiver: Receiver, *, max_seconds: int = 300
) -> tuple[factories.TenantFixture, Caller]:
    """The tenant (its host is the server's address: the AI peer reaches the room on the
    caller's host), its number, and a caller in room ``desk``."""
    host = f"127.0.0.1:{server.port}"
    meet = await factories.tenant(runtime, "meet", [host])
    await subscribe(runtime, meet, receiver.url("/hook"))
    runtime.settings = runtime.settings.model_copy(update={
        "public_base_url": f"http://{host}", "room_max_message_bytes": 64 * 1024,
        "sim_speed": SPEED,
    })  # fmt: skip
    async with runtime.db.transaction() as session:
        await numbers.create_number(
            session, tenant_id=meet.id, name="Front desk", number=NUMBER, voice="Kore",
            language="en-US", api_key="desk-ai-key",
            system_prompt="You are the front desk. Bookings open at nine.", box=runtime.box,
            clock=runtime.clock, max_duration_sec=max_seconds,
        )  # fmt: skip
    return meet, Caller(await server.peer(host, "desk"), "Ann")


async def test_the_simulated_ai_peer_answers_a_call_from_a_room(
    server: Server, runtime: Runtime, receiver: Receiver
) -> None:
    meet, caller = await front_desk(server, runtime, receiver)
    try:
        ai = await call_connected(caller, NUMBER)
        [peer] = caller.joined
        assert (peer["role"], peer["name"], peer["verified"]) == ("ai-vnum", "Front desk", True)
        await media_arrives(ai)  # the AI's tone comes in
        events = await delivered(runtime, receiver, "call.started")
        [started] = [e["data"] for e in events if e["event"] == "call.started"]
        assert started == {"callId": started["callId"], "number": NUMBER, "room": "desk",
                           "direction": "inbound", "source": "vnum"}  # fmt: skip
        events = await delivered(runtime, receiver, "transcript.saved")
        await until(lambda: caller.left == [peer["peerId"]], 10)  # it leaves once done
        assert caller.errors == []
    finally:
        await caller.close()
    ended = finished(events, started["callId"], NUMBER)
    assert ended["durationSec"] >= SCRIPT_SEC
    assert ended["tokens"] > 0
    async with server.http() as client:  # the tenant's host is the server's address
        transcript = (await client.get(
            f"/api.ashx/v1/transcripts/{started['callId']}", headers=await meet.auth(client)
        )).json()  # fmt: skip
    assert transcript["answered"] is True
    assert transcript["durationSec"] == ended["durationSec"]
    assert transcript["startedUtc"] <= transcript["answeredUtc"] <= transcript["endedUtc"]
    turns = transcript["turns"]
    assert [t["speaker"] for t in turns] == ["AI", "Caller"] * 2 + ["AI"]
    assert "Front desk" in turns[0]["text"]
    stamps = [t["ts"] for t in turns]
    assert transcript["startedUtc"] <= stamps[0]
    assert stamps == sorted(stamps)
    assert stamps[-1] <= transcript["endedUtc"]


async def test_the_caller_leaving_ends_the_call(
    server: Server, runtime: Runtime, receiver: Receiver
) -> None:
    _, caller = await front_desk(server, runtime, receiver)
    try:
        await call_connected(caller, NUMBER)
        events = await delivered(runtime, receiver, "call.started")
    finally:
        await caller.close()  # hangs up early in the conversation
    events = await delivered(runtime, receiver, "call.ended")
    [ended] = [e["data"] for e in events if e["event"] == "call.ended"]
    assert ended["outcome"] == "far-hangup"
    assert 0 < ended["durationSec"] < SCRIPT_SEC


async def test_the_call_ends_at_the_numbers_maximum_duration(
    server: Server, runtime: Runtime, receiver: Receiver
) -> None:
    _, caller = await front_desk(server, runtime, receiver, max_seconds=10)
    try:
        await call_connected(caller, NUMBER)
        events = await delivered(runtime, receiver, "transcript.saved")
    finally:
        await caller.close()
    [ended] = [e["data"] for e in events if e["event"] == "call.ended"]
    assert ended["outcome"] == "max-duration"
    assert ended["durationSec"] >= 10


async def test_a_caller_gone_before_the_ai_peer_connects_is_an_empty_room(
    server: Server, runtime: Runtime, receiver: Receiver
) -> None:
    _, caller = await front_desk(server, runtime, receiver)
    peer = Client(caller.ws)
    await peer.send(type="join", name="Ann", call=NUMBER)
    await peer.expect("welcome")
    await peer.send(type="leave")  # before answering the AI peer's offer, if it came yet
    await caller.ws.close()
    events = await delivered(runtime, receiver, "call.ended")  # at once: no 30 s wait
    [ended] = [e["data"] for e in events if e["event"] == "call.ended"]
    assert (ended["outcome"], ended["durationSec"]) == ("empty-room", 0)
    assert [e for e in events if e["event"] in ("call.started", "transcript.saved")] == []


@needs_chromium
async def test_the_room_page_calls_a_virtual_number_on_the_simulator(
    server: Server, runtime: Runtime, receiver: Receiver
) -> None:
    await the_room_page_calls(server, runtime, receiver)
