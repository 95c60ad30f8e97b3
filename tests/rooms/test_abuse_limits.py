"""What strangers cannot take from others: a public virtual number's AI calls (bounded per number
and per caller's address), and a lobby room's places (waiting peers have a bound of their own)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from switchboard.bridge import protocol
from switchboard.platform.numbers import service as numbers
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.rooms.conftest import Client, Server, with_lobby
from tests.rooms.test_abuse import closed_with
from tests.rooms.test_signaling import join
from tests.webhooks.conftest import Receiver

NUMBER = "+4930555010"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={
        "room_max_calls_per_number": 2, "room_max_calls_per_ip": 1, "room_max_waiting": 2,
        "trusted_proxies": ("127.0.0.1/32",),
    })  # fmt: skip


async def caller(server: Server, host: str, room: str, address: str) -> Client:
    """A peer from ``address`` joining ``room`` to call the number."""
    client = Client(await server.peer(host, room, forwarded=address))
    await client.send(type="join", name=f"Caller {address}", call=NUMBER)
    await client.expect("welcome")
    return client


async def front_desk(runtime: Runtime, tenant: factories.TenantFixture, key: str = "k") -> None:
    """The public number ``NUMBER`` of ``tenant``, on the engine key ``key``."""
    async with runtime.db.transaction() as session:
        await numbers.create_number(
            session, tenant_id=tenant.id, name="Front desk", number=NUMBER, voice="Kore",
            language="en-US", api_key=key, system_prompt="p", box=runtime.box,
            clock=runtime.clock,
        )  # fmt: skip


def ai_peers_asked(bridge: Receiver) -> list[dict[str, Any]]:
    """The AI peers a receiver standing in for the bridge was asked for, in order."""
    return [orjson.loads(r.body) for r in bridge.at(protocol.ROOM_AI_PEER_PATH)]


async def refused(client: Client, message: str) -> None:
    """``client``'s call is refused with ``too_many_calls`` and ``message``; it leaves."""
    error = await client.expect("error")
    assert error == {"type": "error", "code": "too_many_calls", "message": message}
    await client.ws.close()


async def test_ai_calls_are_bounded_per_number_and_per_address(
    server: Server, acme: factories.TenantFixture, runtime: Runtime, receiver: Receiver
) -> None:
    """The bridge is a receiver answering 200: every AI peer asked for is one request there,
    carrying the number's engine key. A refused call asks for none."""
    runtime.settings = runtime.settings.model_copy(
        update={"bridge_url": receiver.base, "bridge_secret": "s" * 32}
    )
    await front_desk(runtime, acme, "desk-ai-key")

    def asked() -> list[dict[str, Any]]:
        return ai_peers_asked(receiver)

    first = await caller(server, acme.host, "a", "10.0.0.1")
    await receiver.wait_for(lambda: len(asked()) == 1)
    assert asked()[0]["apiKey"] == "desk-ai-key"
    same_address = await caller(server, acme.host, "a2", "10.0.0.1")
    await refused(same_address, "this address has 1 calls to virtual numbers in progress")
    second = await caller(server, acme.host, "b", "10.0.0.2")
    await receiver.wait_for(lambda: len(asked()) == 2)
    third = await caller(server, acme.host, "c", "10.0.0.3")
    await refused(third, f"{NUMBER} takes 2 calls at once; try again later")
    assert len(asked()) == 2

    # The first call's AI peer joins and leaves (the engine ended the call): it counts no more.
    ai = Client(await server.peer(acme.host, "a"))
    await ai.send(type="join", name="Front desk", role="ai-vnum", token=asked()[0]["joinToken"])
    ai_id = (await ai.expect("welcome"))["peerId"]
    await ai.ws.close()
    assert (await first.expect("peer-left"))["peerId"] == ai_id
    again = await caller(server, acme.host, "c", "10.0.0.3")
    await receiver.wait_for(lambda: len(asked()) == 3)
    # Two calls again (second, again): the first caller's address is free, the number is not.
    retry = await caller(server, acme.host, "a3", "10.0.0.1")
    await refused(retry, f"{NUMBER} takes 2 calls at once; try again later")
    # The second caller leaves, seen by a peer of its room: its call counts no more.
    watcher = Client(await server.peer(acme.host, "b", forwarded="10.0.0.9"))
    await watcher.send(type="join", name="Watcher")
    await watcher.expect("welcome")
    await second.ws.close()
    await watcher.expect("peer-left")
    fourth = await caller(server, acme.host, "d", "10.0.0.1")
    await receiver.wait_for(lambda: len(asked()) == 4)
    assert not [m for m in fourth.inbox if m["type"] == "error"]
    for client in (first, again, watcher, fourth):
        await client.ws.close()


async def test_a_refused_ai_peer_request_gives_its_place_back(
    server: Server, acme: factories.TenantFixture, runtime: Runtime
) -> None:
    runtime.settings = runtime.settings.model_copy(update={"bridge_url": "none"})
    await front_desk(runtime, acme)
    for room in ("a", "b", "c"):  # one address, one call at a time: each refused by the bridge
        client = await caller(server, acme.host, room, "10.0.0.1")
        assert (await client.expect("error"))["code"] == "bridge_not_configured"
        await client.ws.close()


async def test_waiting_peers_never_keep_admitted_ones_out(
    server: Server, acme: factories.TenantFixture, runtime: Runtime
) -> None:
    """The room holds 4 admitted peers (``room_max_peers``), its lobby 2 waiting ones
    (``room_max_waiting``), each bound apart from the other."""
    await with_lobby(runtime, acme.id, "x")
    key = await factories.api_key(runtime, acme)
    host = await join(server, acme.host, "Host", token=key)
    await host.expect("welcome")
    guests = [await join(server, acme.host, f"Guest {i}") for i in range(2)]
    waiting = [(await guest.expect("waiting"))["peerId"] for guest in guests]
    late = await join(server, acme.host, "Guest 3")
    assert await closed_with(late) == (1008, "the lobby is full (2 waiting)")
    members = []
    for i in range(3):  # 4 admitted beside 2 waiting: the waiting ones took no place
        members.append(await join(server, acme.host, f"Member {i}", token=key))
        await members[-1].expect("welcome")  # one at a time: the welcome lists them in order
    extra = await join(server, acme.host, "Member 4", token=key)
    assert await closed_with(extra) == (1008, "the room is full (4 peers)")

    await host.send(type="admit", peerId=waiting[0])
    assert await host.expect("error") == {
        "type": "error", "code": "room_full",
        "message": "the room is full (4 peers): admit once one leaves",
    }  # fmt: skip
    await members[0].ws.close()
    await host.expect("peer-left")
    await host.send(type="admit", peerId=waiting[0])
    assert [p["name"] for p in (await guests[0].expect("welcome"))["peers"]] == [
        "Host", "Member 1", "Member 2",
    ]  # fmt: skip
    assert not [m for m in guests[1].inbox if m["type"] == "welcome"]
    for client in (host, *guests, *members[1:]):
        await client.ws.close()
