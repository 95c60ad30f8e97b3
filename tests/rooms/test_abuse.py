"""What a stranger on the signaling WebSocket cannot do: hold sockets without joining, open
sockets without end, or pose as the platform's own peers."""

from __future__ import annotations

import asyncio

import pytest
from websockets.exceptions import ConnectionClosed

from switchboard.platform.rooms import vnum
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.rooms.conftest import Client, Server
from tests.rooms.test_signaling import join


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"room_join_timeout": 0.5, "room_max_sockets_per_ip": 3})


async def closed_with(client: Client) -> tuple[int, str]:
    """The code and reason the server closed ``client`` with (frames before it are skipped)."""
    async with asyncio.timeout(15):
        while True:
            try:
                await client.ws.recv()
            except ConnectionClosed as closed:
                received = closed.rcvd
                break
    assert received is not None
    return received.code, received.reason


async def test_a_socket_that_never_joins_is_closed(
    server: Server, acme: factories.TenantFixture
) -> None:
    joined = await join(server, acme.host, "Ann")  # a join in time is served as before
    await joined.expect("welcome")
    silent = Client(await server.peer(acme.host))  # opened after Ann's: closed after her deadline
    assert await closed_with(silent) == (1008, "no join within 0.5 seconds")
    await joined.send(type="preference", pref="auto")
    other = await join(server, acme.host, "Bob")
    assert (await joined.expect("peer-joined"))["peer"]["name"] == "Bob"
    await other.ws.close()
    await joined.ws.close()


async def test_one_address_holds_a_bounded_number_of_sockets(
    server: Server, acme: factories.TenantFixture
) -> None:
    held = [await join(server, acme.host, f"P{i}", room=f"r{i}") for i in range(3)]
    for peer in held:
        await peer.expect("welcome")
    fourth = Client(await server.peer(acme.host, "r9"))
    assert await closed_with(fourth) == (1008, "more than 3 signaling sockets from this address")
    await held[0].ws.close()
    again = await rejoined(server, acme.host)
    for peer in [*held[1:], again]:
        await peer.ws.close()


async def rejoined(server: Server, host: str) -> Client:
    """A peer that joins once the server has counted a closed socket out (it may take a moment
    to see the close)."""
    for _ in range(100):
        try:
            again = await join(server, host, "Again", room="r9")
            await again.expect("welcome", within=2)
            return again
        except ConnectionClosed:
            await asyncio.sleep(0.05)
    raise AssertionError("a closed socket's place was never given back")


@pytest.mark.parametrize(
    ("role", "reason"),
    [
        ("ai-vnum", "role ai-vnum joins with the join token of a call"),
        ("sip-bridge", "role sip-bridge needs a bearer of the tenant"),
    ],
)
async def test_an_anonymous_peer_cannot_pose_as_the_platforms_own(
    server: Server, acme: factories.TenantFixture, role: str, reason: str
) -> None:
    ann = await join(server, acme.host, "Ann")
    await ann.expect("welcome")
    poser = await join(server, acme.host, "AI", role=role)
    assert await closed_with(poser) == (1008, reason)
    assert not [m for m in ann.inbox if m["type"] == "peer-joined"]
    await ann.ws.close()


async def test_platform_roles_join_with_their_credentials_only(
    server: Server, acme: factories.TenantFixture, runtime: Runtime
) -> None:
    key = await factories.api_key(runtime, acme)
    leg = await join(server, acme.host, "Desk phone", role="sip-bridge", token=key)
    assert (await leg.expect("welcome"))["peers"] == []
    grant = vnum.JoinGrant(acme.id, "x", "vnum-1")
    ai = await join(server, acme.host, "AI", role="ai-vnum", token=vnum.join_token(runtime, grant))
    assert (await ai.expect("welcome"))["peers"][0]["role"] == "sip-bridge"
    human = await join(server, acme.host, "AI", token=vnum.join_token(runtime, grant))
    assert await closed_with(human) == (1008, "a join token joins as role ai-vnum only")
    await ai.ws.close()
    await leg.ws.close()
