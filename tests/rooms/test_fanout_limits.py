"""The rooms' limits that bind every ``serve`` process sharing the fan-out's Redis (decision
0854): AI calls per virtual number and per caller's address, a lobby's waiting peers. Two real
processes on one PostgreSQL and a Redis of the test's own; the bridge is a receiver answering
200, so every AI peer asked for is one request there."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
from sqlalchemy import text
from websockets.exceptions import ConnectionClosed

from switchboard.platform.rooms.fanout import NODE_KEY
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.rooms.conftest import Client, with_lobby
from tests.rooms.processes import PrivateRedis, Serve, clock, postgres_only, private_redis, start
from tests.rooms.test_abuse import closed_with
from tests.rooms.test_abuse_limits import NUMBER, ai_peers_asked, front_desk, refused
from tests.webhooks.conftest import Receiver

__all__ = ["clock", "postgres_only", "private_redis", "start"]

pytestmark = pytest.mark.slow

BY_NUMBER = f"{NUMBER} takes 2 calls at once; try again later"
BY_ADDRESS = "this address has 1 calls to virtual numbers in progress"


@pytest.fixture
def processes(
    settings: Settings, start: Callable[..., Any], private_redis: PrivateRedis, receiver: Receiver
) -> Callable[[int], Awaitable[list[Serve]]]:
    """``await processes(n)``: ``n`` processes sharing the test's Redis, with two calls per
    number, one per address and two waiting peers per lobby, the receiver as their bridge."""
    env = {
        "SWITCHBOARD_BRIDGE_URL": receiver.base, "SWITCHBOARD_BRIDGE_SECRET": "s" * 32,
        "SWITCHBOARD_ROOM_MAX_CALLS_PER_NUMBER": "2", "SWITCHBOARD_ROOM_MAX_CALLS_PER_IP": "1",
        "SWITCHBOARD_ROOM_MAX_WAITING": "2", "SWITCHBOARD_TRUSTED_PROXIES": "127.0.0.1/32",
    }  # fmt: skip

    async def started(count: int) -> list[Serve]:
        return list(
            await asyncio.gather(*(start(settings, private_redis.url, env) for _ in range(count)))
        )

    return started


async def call(served: Serve, host: str, room: str, address: str) -> tuple[Client, str]:
    """A caller from ``address`` joins ``room`` through ``served`` to call the number; the
    caller and its peer id."""
    client = await served.join(host, room, f"Caller {address}", forwarded=address, call=NUMBER)
    return client, (await client.expect("welcome"))["peerId"]


async def test_calls_to_a_number_are_bounded_over_both_processes(
    runtime: Runtime, acme: factories.TenantFixture, receiver: Receiver,
    processes: Callable[[int], Awaitable[list[Serve]]],
) -> None:  # fmt: skip
    first, second = await processes(2)
    await front_desk(runtime, acme)

    def asked() -> int:
        return len(ai_peers_asked(receiver))

    one, _ = await call(first, acme.host, "a", "10.0.0.1")
    await receiver.wait_for(lambda: asked() == 1)
    await refused((await call(second, acme.host, "a2", "10.0.0.1"))[0], BY_ADDRESS)
    other, _ = await call(second, acme.host, "b", "10.0.0.2")
    await receiver.wait_for(lambda: asked() == 2)
    for served in (first, second):  # two calls, one in each process: the number is full
        await refused((await call(served, acme.host, "c", "10.0.0.3"))[0], BY_NUMBER)
    assert asked() == 2

    # The first call's AI peer reaches the second process (any may take it) and leaves: the
    # call the first process counted ends, by the time its caller hears of the leave.
    ai = await second.join(
        acme.host, "a", "Front desk", role="ai-vnum",
        token=ai_peers_asked(receiver)[0]["joinToken"],
    )  # fmt: skip
    ai_id = (await ai.expect("welcome"))["peerId"]
    await ai.ws.close()
    assert (await one.expect("peer-left"))["peerId"] == ai_id
    await call(second, acme.host, "c", "10.0.0.3")
    await receiver.wait_for(lambda: asked() == 3)

    # The second process's first caller leaves, seen from the first process: its place and its
    # address are free there.
    watcher = await first.join(acme.host, "b", "Watcher", forwarded="10.0.0.9")
    await watcher.expect("welcome")
    await other.ws.close()
    await watcher.expect("peer-left")
    fourth, _ = await call(first, acme.host, "d", "10.0.0.2")
    await receiver.wait_for(lambda: asked() == 4)
    await refused((await call(first, acme.host, "e", "10.0.0.4"))[0], BY_NUMBER)
    assert not [m for m in fourth.inbox if m["type"] == "error"]


async def test_a_dead_process_gives_its_calls_back_once_its_liveness_is_gone(
    runtime: Runtime, acme: factories.TenantFixture, receiver: Receiver,
    processes: Callable[[int], Awaitable[list[Serve]]], private_redis: PrivateRedis,
) -> None:  # fmt: skip
    first, second = await processes(2)
    await front_desk(runtime, acme)
    _, peer_id = await call(second, acme.host, "a", "10.0.0.1")
    await call(second, acme.host, "b", "10.0.0.2")
    await receiver.wait_for(lambda: len(ai_peers_asked(receiver)) == 2)
    async with runtime.db.transaction(read_only=True) as session:
        query = text("SELECT node FROM room_peers WHERE peer_id = :peer")
        node = (await session.execute(query, {"peer": peer_id})).scalar_one()

    second.process.send_signal(signal.SIGKILL)
    second.process.wait()
    # Killed, it cannot give its calls back: they count until its liveness key expires ...
    await refused((await call(first, acme.host, "c", "10.0.0.1"))[0], BY_NUMBER)
    redis = aioredis.from_url(private_redis.url)
    try:  # ... here removed rather than waited for (it lives 20 s after the last beat)
        assert await redis.delete(NODE_KEY + node) == 1
    finally:
        await redis.aclose()
    # ... and then neither the number nor the addresses hold its calls.
    await call(first, acme.host, "c", "10.0.0.1")
    await call(first, acme.host, "d", "10.0.0.2")
    await receiver.wait_for(lambda: len(ai_peers_asked(receiver)) == 4)


async def test_a_lobby_holds_its_waiting_peers_of_both_processes(
    runtime: Runtime, acme: factories.TenantFixture,
    processes: Callable[[int], Awaitable[list[Serve]]],
) -> None:  # fmt: skip
    first, second = await processes(2)
    await with_lobby(runtime, acme.id, "lobby")
    key = await factories.api_key(runtime, acme)
    host = await first.join(acme.host, "lobby", "Host", token=key)
    await host.expect("welcome")
    await (await first.join(acme.host, "lobby", "Guest 1")).expect("waiting")
    guest = await second.join(acme.host, "lobby", "Guest 2")
    waiting = (await guest.expect("waiting"))["peerId"]
    for served in (first, second):
        late = await served.join(acme.host, "lobby", "Late")
        assert await closed_with(late) == (1008, "the lobby is full (2 waiting)")

    # The host on the first process admits the guest waiting on the second: a place is free.
    await host.send(type="admit", peerId=waiting)
    await guest.expect("welcome")
    await (await first.join(acme.host, "lobby", "Guest 3")).expect("waiting")


async def test_a_count_redis_refuses_closes_the_rooms_and_starts_no_call(
    runtime: Runtime, acme: factories.TenantFixture, receiver: Receiver,
    processes: Callable[[int], Awaitable[list[Serve]]], private_redis: PrivateRedis,
) -> None:  # fmt: skip
    """Redis answers but refuses the count's script: the call is not let through uncounted;
    as for any lost fan-out, the process's sockets close so their clients rejoin."""
    [served] = await processes(1)
    await front_desk(runtime, acme)
    bystander = await served.join(acme.host, "other", "Bystander")
    await bystander.expect("welcome")
    redis = aioredis.from_url(private_redis.url)
    try:
        await redis.acl_setuser("default", enabled=True, commands=["-eval"])
        caller = await served.join(acme.host, "a", "Caller", call=NUMBER)
        await caller.expect("welcome")
        for client in (caller, bystander):
            with pytest.raises(ConnectionClosed) as closed:
                await client.expect("never")
            assert closed.value.rcvd is not None
            assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
                1012, "room fan-out lost: rejoin",
            )  # fmt: skip
        assert ai_peers_asked(receiver) == []
        await redis.acl_setuser("default", enabled=True, commands=["+eval"])
    finally:
        await redis.aclose()
    await call(served, acme.host, "a", "10.0.0.1")  # counted again: the call is made
    await receiver.wait_for(lambda: len(ai_peers_asked(receiver)) == 1)
