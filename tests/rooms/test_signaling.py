"""Signaling over a real WebSocket: join, relay, presence events, lobby, limits."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import orjson
import pytest
from websockets.exceptions import ConnectionClosed

from switchboard.platform.numbers import service as numbers
from switchboard.runtime import Runtime
from tests import factories
from tests.console.signin import console_clients, csrf_of, sign_in
from tests.rooms.conftest import Client, Server, with_lobby


async def join(server: Server, host: str, name: str, **extra: Any) -> Client:
    ws = await server.peer(host, extra.pop("room", "x"))
    client = Client(ws)
    await client.send(type="join", name=name, **extra)
    return client


async def test_two_peers_meet_relay_and_leave(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    key = await factories.api_key(runtime, acme)
    alice = await join(server, acme.host, "Alice", token=key)
    welcome = await alice.expect("welcome")
    assert welcome["mode"] == "mesh"
    assert welcome["peers"] == []
    assert welcome["iceServers"] == []
    bob = await join(server, acme.host, "Bob", role="human")
    bob_welcome = await bob.expect("welcome")
    assert bob_welcome["peers"] == [
        {"peerId": welcome["peerId"], "name": "Alice", "role": "human", "verified": True}
    ]
    joined = await alice.expect("peer-joined")
    assert joined["peer"]["name"] == "Bob"
    assert joined["peer"]["verified"] is False

    await bob.send(type="offer", to=welcome["peerId"], sdp="v=0 offer")
    assert await alice.expect("offer") == {
        "type": "offer",
        "sdp": "v=0 offer",
        "from": bob_welcome["peerId"],
    }
    candidate = {"candidate": "candidate:1 1 udp 1 127.0.0.1 9 typ host", "sdpMid": "0",
                 "sdpMLineIndex": 0}  # fmt: skip
    await alice.send(type="candidate", to=bob_welcome["peerId"], candidate=candidate)
    got = await bob.expect("candidate")
    assert got["candidate"]["candidate"] == candidate["candidate"]
    await bob.send(type="offer", to="p_nobody", sdp="v=0")
    assert (await bob.expect("error"))["code"] == "unknown_peer"

    await bob.send(type="leave")
    assert (await alice.expect("peer-left"))["peerId"] == bob_welcome["peerId"]
    await alice.ws.close()

    events = await hooks(4)  # delivered concurrently: compared by what they are about
    assert {e["tenant"] for e in events} == {"acme"}
    by = {(e["event"], e["data"]["peerId"]): e["data"] for e in events}
    alice_id, bob_id = welcome["peerId"], bob_welcome["peerId"]
    assert by["room.peer.joined", alice_id] == {
        "room": "x", "peerId": alice_id, "name": "Alice", "role": "human", "verified": True,
        "ip": "127.0.0.1", "joinPath": "direct", "peerCount": 1,
    }  # fmt: skip
    assert by["room.peer.joined", bob_id]["peerCount"] == 2
    assert by["room.peer.joined", bob_id]["verified"] is False
    assert by["room.peer.left", bob_id] == {
        "room": "x", "peerId": bob_id, "name": "Bob", "role": "human", "verified": False,
        "ip": "127.0.0.1", "reason": "ws-close", "peerCount": 1,
    }  # fmt: skip
    assert by["room.peer.left", alice_id]["peerCount"] == 0


async def test_presence_counts_every_role(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    human = await join(server, acme.host, "Ann")
    await human.expect("welcome")
    key = await factories.api_key(runtime, acme)
    leg = await join(server, acme.host, "Desk phone", role="sip-bridge", token=key)
    await leg.expect("welcome")
    events = {e["data"]["name"]: e["data"] for e in await hooks(2)}
    assert events["Desk phone"]["role"] == "sip-bridge"
    assert events["Desk phone"]["peerCount"] == 2


@pytest.mark.parametrize(
    ("frame", "code", "reason"),
    [
        ("not json", 1008, "invalid message"),
        ('{"type": "join"}', 1008, "invalid message: join.name"),
        ('{"type": "offer", "to": "p", "sdp": "x"}', 1008, "the first message must be a join"),
        ('{"type": "join", "name": "' + "x" * 5000 + '"}', 1009, "message above 4096 bytes"),
    ],
)
async def test_a_bad_message_closes_only_that_socket(
    server: Server, acme: factories.TenantFixture, frame: str, code: int, reason: str
) -> None:
    good = await join(server, acme.host, "Good")
    await good.expect("welcome")
    async with server.peer(acme.host) as bad:
        await bad.send(frame)
        with pytest.raises(ConnectionClosed) as closed:
            await bad.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == code
    assert closed.value.rcvd.reason.startswith(reason)
    await good.send(type="preference", pref="auto")  # the good socket is still served
    other = await join(server, acme.host, "Other")
    assert (await good.expect("peer-joined"))["peer"]["name"] == "Other"
    await other.ws.close()


async def test_over_rate_and_full_room(server: Server, acme: factories.TenantFixture) -> None:
    chatty = await join(server, acme.host, "Chatty")
    await chatty.expect("welcome")
    with contextlib.suppress(ConnectionClosed):  # the server may close while we still send
        for _ in range(100):
            await chatty.send(type="preference", pref="auto")
            await asyncio.sleep(0)
    with pytest.raises(ConnectionClosed) as closed:
        await chatty.ws.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1008
    assert "messages per second" in closed.value.rcvd.reason

    peers = [await join(server, acme.host, f"P{i}") for i in range(4)]
    for peer in peers:
        await peer.expect("welcome")
    async with server.peer(acme.host) as fifth:
        await fifth.send('{"type": "join", "name": "Fifth"}')
        with pytest.raises(ConnectionClosed) as full:
            await fifth.recv()
    assert full.value.rcvd is not None
    assert "the room is full" in full.value.rcvd.reason


async def test_unknown_host_and_bad_token(server: Server, acme: factories.TenantFixture) -> None:
    async with server.peer("nowhere.test") as ws:
        await ws.send('{"type": "join", "name": "A"}')
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.reason == "no tenant serves this host"
    async with server.peer(acme.host) as ws:
        await ws.send('{"type": "join", "name": "A", "token": "ak_forged"}')
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.reason == "the token is not valid"


async def test_lobby_admit(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    await with_lobby(runtime, acme.id, "x")
    key = await factories.api_key(runtime, acme)
    host = await join(server, acme.host, "Host", token=key)
    await host.expect("welcome")
    guest = await join(server, acme.host, "Guest")
    waiting = await guest.expect("waiting")
    knock = await host.expect("knock")
    assert knock == {"type": "knock", "peerId": waiting["peerId"], "name": "Guest"}
    await host.send(type="admit", peerId=waiting["peerId"])
    welcome = await guest.expect("welcome")
    assert [p["name"] for p in welcome["peers"]] == ["Host"]
    events = {e["data"]["name"]: e["data"] for e in await hooks(2)}
    assert events["Guest"]["joinPath"] == "admit"
    assert events["Guest"]["peerCount"] == 2
    assert events["Guest"]["verified"] is False


async def test_a_signed_out_console_session_no_longer_verifies_a_peer(
    server: Server, acme: factories.TenantFixture, runtime: Runtime
) -> None:
    """A console admin's session cookie verifies a peer (a lobby room lets it in); once the
    admin signs out, a copy of the cookie is an anonymous peer's, which waits."""
    await with_lobby(runtime, acme.id, "x")
    await console_clients(runtime, acme)
    async with server.http(acme.host) as console:
        assert (await sign_in(console)).status_code == 303
        cookie = f"sb_console={console.cookies['sb_console']}"
        admin = Client(await server.peer(acme.host, cookie=cookie))
        await admin.send(type="join", name="Admin")
        await admin.expect("welcome")
        token = csrf_of((await console.get("/admin/calls")).text)
        assert (await console.post("/admin/logout", data={"csrf": token})).status_code == 303
    copy = Client(await server.peer(acme.host, cookie=cookie))
    await copy.send(type="join", name="Copy")
    assert orjson.loads(await copy.ws.recv())["type"] == "waiting"  # not "welcome"
    assert (await admin.expect("knock"))["name"] == "Copy"


async def test_a_signed_in_number_refuses_an_anonymous_caller(
    server: Server, acme: factories.TenantFixture, runtime: Runtime
) -> None:
    """``visibility: signed-in`` (docs/numbers.md): only a peer that joined with the tenant's
    bearer may call the number; an anonymous one gets ``forbidden`` and no AI peer is asked."""
    runtime.settings = runtime.settings.model_copy(update={"bridge_url": "none"})
    async with runtime.db.transaction() as session:
        await numbers.create_number(
            session, tenant_id=acme.id, name="Private desk", number="300", voice="Kore",
            language="en-US", api_key="k", system_prompt="p", box=runtime.box,
            clock=runtime.clock, visibility="signed-in",
        )  # fmt: skip
    anonymous = await join(server, acme.host, "Anon", call="300")
    await anonymous.expect("welcome")
    refused = await anonymous.expect("error")
    assert refused["code"] == "forbidden"
    key = await factories.api_key(runtime, acme)
    member = await join(server, acme.host, "Member", call="300", token=key, room="y")
    await member.expect("welcome")
    # Past the visibility check: the AI peer is asked for, and here no bridge is configured.
    assert (await member.expect("error"))["code"] == "bridge_not_configured"
