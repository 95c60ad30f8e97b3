"""One room through two real ``serve`` processes on one PostgreSQL, fanned out through Redis
(decision 0840): presence, relaying and the cascade span both; a lost Redis closes sockets."""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
from sqlalchemy import text
from websockets.exceptions import ConnectionClosed

from switchboard.platform.rooms.fanout import channel_of
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.rooms.conftest import with_lobby
from tests.rooms.processes import (
    SHARED_REDIS,
    PrivateRedis,
    clock,
    postgres_only,
    private_redis,
    start,
)
from tests.rooms.test_cascade import named, set_sfu

__all__ = ["clock", "postgres_only", "private_redis", "start"]

pytestmark = pytest.mark.slow


async def test_one_room_through_two_processes(
    settings: Settings, runtime: Runtime, acme: factories.TenantFixture, hooks: Any,
    start: Callable[..., Any],
) -> None:  # fmt: skip
    await set_sfu(runtime, acme, AutoPromoteHumanCount="2")
    first, second = await asyncio.gather(start(settings), start(settings))
    room = "fan-" + uuid.uuid4().hex[:8]  # the Redis is shared: channels of this run only

    alice = await first.join(acme.host, room, "Alice")
    alice_id = (await alice.expect("welcome"))["peerId"]
    bob = await second.join(acme.host, room, "Bob")
    welcome = await bob.expect("welcome")
    bob_id = welcome["peerId"]
    assert welcome["peers"] == [
        {"peerId": alice_id, "name": "Alice", "role": "human", "verified": False}
    ]
    assert (await alice.expect("peer-joined"))["peer"]["peerId"] == bob_id

    await bob.send(type="offer", to=alice_id, sdp="v=0 offer across processes")
    assert await alice.expect("offer") == {
        "type": "offer", "sdp": "v=0 offer across processes", "from": bob_id,
    }  # fmt: skip
    await alice.send(type="answer", to=bob_id, sdp="v=0 answer")
    assert (await bob.expect("answer"))["from"] == alice_id
    await alice.send(type="offer", to="p_nobody", sdp="v=0")
    assert (await alice.expect("error"))["code"] == "unknown_peer"

    # The third human, on the first process, crosses the threshold of two: the room is
    # promoted once, counting the humans of both processes, and every peer hears of it.
    carol = await first.join(acme.host, room, "Carol")
    carol_welcome = await carol.expect("welcome")
    assert {p["name"] for p in carol_welcome["peers"]} == {"Alice", "Bob"}
    reason = "auto-promote-join-human-count-3"
    for peer in (alice, bob, carol):
        assert await peer.expect("mode") == {"type": "mode", "mode": "sfu", "reason": reason}
    assert (await bob.expect("peer-joined"))["peer"]["name"] == "Carol"

    await bob.send(type="leave")
    for peer in (alice, carol):
        assert (await peer.expect("peer-left"))["peerId"] == bob_id

    events = await hooks(5)  # three joins, the promote, one leave
    joined = {e["data"]["name"]: e["data"] for e in events if e["event"] == "room.peer.joined"}
    assert [joined[n]["peerCount"] for n in ("Alice", "Bob", "Carol")] == [1, 2, 3]
    assert named(events, "room.cascade.promoted") == [{
        "room": room, "mode": "sfu", "reason": reason, "trigger": "auto-join", "humanCount": 3,
    }]  # fmt: skip
    left = named(events, "room.peer.left")
    assert len(left) == 1
    assert left == [{
        "room": room, "peerId": bob_id, "name": "Bob", "role": "human", "verified": False,
        "ip": "127.0.0.1", "reason": "ws-close", "peerCount": 2,
    }]  # fmt: skip
    await alice.ws.close()
    await carol.ws.close()
    left = named(await hooks(7), "room.peer.left")
    assert sorted(e["peerCount"] for e in left) == [0, 1, 2]


async def test_a_lost_redis_closes_the_sockets_so_peers_rejoin(
    settings: Settings, acme: factories.TenantFixture, start: Callable[..., Any],
    private_redis: PrivateRedis,
) -> None:  # fmt: skip
    served = await start(settings, private_redis.url)
    room = "lost-" + uuid.uuid4().hex[:8]
    alice = await served.join(acme.host, room, "Alice")
    await alice.expect("welcome")
    bob = await served.join(acme.host, room, "Bob")
    await bob.expect("welcome")
    private_redis.process.send_signal(signal.SIGKILL)
    for peer in (alice, bob):
        with pytest.raises(ConnectionClosed) as closed:
            await peer.expect("never", within=15)
        assert closed.value.rcvd is not None
        assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
            1012, "room fan-out lost: rejoin",
        )  # fmt: skip
    late = await served.join(acme.host, room, "Late")  # Redis still gone: refused alike
    with pytest.raises(ConnectionClosed) as refused:
        await late.expect("welcome", within=15)
    assert refused.value.rcvd is not None
    assert refused.value.rcvd.reason == "room fan-out lost: rejoin"


async def test_the_detector_and_the_lobby_across_processes(
    settings: Settings, runtime: Runtime, acme: factories.TenantFixture, hooks: Any,
    start: Callable[..., Any],
) -> None:  # fmt: skip
    await set_sfu(runtime, acme, MinStressedPeers="2", AutoPromoteBwMinHumans="2")
    first, second = await asyncio.gather(start(settings), start(settings))
    room, lobby = "bw-" + uuid.uuid4().hex[:8], "lobby-" + uuid.uuid4().hex[:8]

    # One stressed human in each process: together they are the two the detector needs.
    ann = await first.join(acme.host, room, "Ann")
    await ann.expect("welcome")
    ben = await second.join(acme.host, room, "Ben")
    ben_id = (await ben.expect("welcome"))["peerId"]
    # Ann may address Ben once her process has heard of him, as a page learns of him: an offer
    # sent before that news crossed the fan-out is refused as ``unknown_peer``.
    assert (await ann.expect("peer-joined"))["peer"]["peerId"] == ben_id
    bad = {"abrMbps": 0.8, "lossPct": 7.5, "packetsSent": 400, "rttMs": 350}
    await ann.send(type="stats", **bad)
    await ann.send(type="offer", to=ben_id, sdp="v=0")  # after the stress news, in order
    await ben.expect("offer")
    await ben.send(type="stats", **{**bad, "abrMbps": 1.2})
    reason = "auto-promote-bandwidth-degraded-stressed-2-of-2"
    for peer in (ann, ben):
        assert await peer.expect("mode") == {"type": "mode", "mode": "sfu", "reason": reason}
    events = await hooks(4)  # two joins, the degraded room, the promote
    [degraded] = named(events, "room.bandwidth.degraded")
    assert (degraded["stressedCount"], degraded["triggerPeerId"]) == (2, ben_id)
    assert degraded["sampleMetrics"] == {"abrMbps": 0.8, "lossPct": 7.5, "rttMs": 350}
    assert [e["reason"] for e in named(events, "room.cascade.promoted")] == [reason]

    # A lobby: the guest waits on the second process, the verified host on the first admits.
    await with_lobby(runtime, acme.id, lobby)
    key = await factories.api_key(runtime, acme)
    host = await first.join(acme.host, lobby, "Host", token=key)
    await host.expect("welcome")
    guest = await second.join(acme.host, lobby, "Guest")
    waiting = await guest.expect("waiting")
    assert await host.expect("knock") == {
        "type": "knock", "peerId": waiting["peerId"], "name": "Guest",
    }  # fmt: skip
    await host.send(type="admit", peerId=waiting["peerId"])
    welcome = await guest.expect("welcome")
    assert [p["name"] for p in welcome["peers"]] == ["Host"]
    assert (await host.expect("peer-joined"))["peer"]["peerId"] == waiting["peerId"]

    # The second process dies without its peers leaving; once its liveness key is gone (here
    # removed rather than waited for), the next join elsewhere drops its peers. A lock it held
    # on the room when it died (set here, whether or not the kill caught it holding one) is
    # broken, not waited out for its 60 s.
    async with runtime.db.transaction(read_only=True) as session:
        query = text("SELECT node FROM room_peers WHERE peer_id = :peer")
        node = (await session.execute(query, {"peer": waiting["peerId"]})).scalar_one()
    second.process.send_signal(signal.SIGKILL)
    second.process.wait()
    client = aioredis.from_url(SHARED_REDIS)
    try:
        assert await client.delete(f"switchboard:rooms:node:{node}") == 1
        await client.set(channel_of(acme.id, lobby) + ":lock", f"{node}:0123abcd", ex=60)
    finally:
        await client.aclose()
    late = await first.join(acme.host, lobby, "Late", token=key)
    assert [p["name"] for p in (await late.expect("welcome"))["peers"]] == ["Host"]
    assert (await host.expect("peer-left"))["peerId"] == waiting["peerId"]
