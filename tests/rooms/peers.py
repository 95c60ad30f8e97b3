"""Helpers of the SFU tests (Janus through the real bridge, and the simulated bridge's
in-process SFU) around the product's room peer (``platform/rooms/simpeer.py``): the
mesh-to-SFU scenario with every proxy event asserted at the webhook receiver."""

from __future__ import annotations

import asyncio
from typing import Any

from aiortc import RTCPeerConnection

from switchboard.platform.rooms.simpeer import RoomPeer
from switchboard.runtime import Runtime
from tests import factories
from tests.rooms.conftest import Server
from tests.rooms.test_cascade import named, set_sfu


def describe(peers: list[RoomPeer]) -> list[dict[str, Any]]:
    return [{
        "name": p.name, "mode": p.mode, "mesh": {k: pc.connectionState for k, pc in p.mesh.items()},
        "publisher": p.publisher.connectionState if p.publisher else None,
        "subscribers": {k: pc.connectionState for k, pc in p.subscribers.items()},
        "errors": p.errors, "frames": p.frames,
    } for p in peers]  # fmt: skip


async def inbound_packets(pc: RTCPeerConnection) -> int:
    report = await pc.getStats()
    return sum(s.packetsReceived for s in report.values() if s.type == "inbound-rtp")


async def until(check: Any, within: float = 20.0, state: Any = None) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met in time: {state() if state else ''}")
        await asyncio.sleep(0.05)


async def call_connected(caller: RoomPeer, number: str) -> RTCPeerConnection:
    """``caller`` joins calling ``number``; its connection to the AI peer once that is up."""
    await caller.join(call=number)
    await until(
        lambda: any(pc.connectionState == "connected" for pc in caller.mesh.values()),
        20,
        lambda: describe([caller]),
    )
    [ai] = caller.mesh.values()
    return ai


async def media_arrives(pc: RTCPeerConnection, within: float = 10.0) -> None:
    """Inbound RTP rising on ``pc``."""
    first = await inbound_packets(pc)
    async with asyncio.timeout(within):
        while await inbound_packets(pc) <= first:  # noqa: ASYNC110 (polled)
            await asyncio.sleep(0.1)


async def three_peers_move_to_the_sfu(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    """A and B meet in mesh; C joins (threshold 2), everyone moves to the SFU make-before-break
    with media still flowing, and every cascade and ``sfu.*`` event reaches the receiver."""
    await set_sfu(runtime, acme, AutoPromoteHumanCount="2")
    peers: list[RoomPeer] = []
    try:
        for name in ("A", "B"):
            peers.append(RoomPeer(await server.peer(acme.host, "x"), name))
            await peers[-1].join()
        a, b = peers
        # mesh: A and B see each other's video before anyone else comes
        await until(lambda: a.frames.get(b.peer_id, 0) > 3 and b.frames.get(a.peer_id, 0) > 3)
        assert a.publisher is None
        peers.append(RoomPeer(await server.peer(acme.host, "x"), "C"))
        await peers[-1].join()  # the third human: promote

        def migrated() -> bool:
            return all(
                p.mode == "sfu" and not p.mesh and len(p.subscribers) == 2
                and all(pc.connectionState == "connected" for pc in p.subscribers.values())
                # the mesh edge's "closed" state arrives once its close has finished
                and len(set(p.mesh_closed)) == 2
                for p in peers
            )  # fmt: skip

        await until(migrated, 30, lambda: describe(peers))
        assert all(p.errors == [] for p in peers), [p.errors for p in peers]
        # make-before-break: a mesh edge closed (here or at the far end) only once the SFU
        # carried that peer's media here
        assert [sorted(set(p.mesh_closed)) for p in peers] == [
            sorted((o, True) for o in p.subscribers) for p in peers
        ]
        # media still flows, now through Janus: RTP and decoded frames rising on every edge
        frames = [dict(p.frames) for p in peers]
        await until(lambda: all(
            p.frames.get(other, 0) > frames[i].get(other, 0) + 3
            for i, p in enumerate(peers) for other in p.subscribers
        ))  # fmt: skip
        for p in peers:  # each edge's inbound RTP count rises (its stats lag the frames a little)
            for pc in p.subscribers.values():
                await media_arrives(pc)

        ids = {p.name: p.peer_id for p in peers}
        # 3 joins, the promote, 3 publisher offers and 6 subscriptions, 9 connections
        events = await hooks(22)
        assert named(events, "room.cascade.promoted") == [{
            "room": "x", "mode": "sfu", "reason": "auto-promote-join-human-count-3",
            "trigger": "auto-join", "humanCount": 3,
        }]  # fmt: skip
        offers = named(events, "sfu.offer.received")
        assert sorted(o["peerId"] for o in offers) == sorted(ids.values())
        for offer in offers:
            assert offer == {
                "room": "x", "peerId": offer["peerId"], "role": "human",
                "offerLen": offer["offerLen"], "outcome": "answer", "code": None,
                "phase": "publish", "httpStatus": 200,
            }  # fmt: skip
            assert offer["offerLen"] > 200
        pairs = {(p.peer_id, s) for p in peers for s in p.subscribers}
        subscribes = named(events, "sfu.subscribe.received")
        assert {(s["subscriberPeerId"], s["publisherPeerId"]) for s in subscribes} == pairs
        assert len(subscribes) == 6
        for subscribe in subscribes:
            assert subscribe == {
                "room": "x", "publisherPeerId": subscribe["publisherPeerId"],
                "subscriberPeerId": subscribe["subscriberPeerId"],
                "offerLen": subscribe["offerLen"], "outcome": "answer", "code": None,
                "phase": "subscribe", "httpStatus": 200,
            }  # fmt: skip
            assert subscribe["offerLen"] > 200
        published = named(events, "sfu.publisher.connected")
        assert sorted(e["peerId"] for e in published) == sorted(ids.values())
        for event in published:
            assert event == {
                "room": "x", "peerId": event["peerId"], "role": "human",
                "connectedUtc": event["connectedUtc"], "packetsAtConn": event["packetsAtConn"],
            }  # fmt: skip
            assert event["connectedUtc"].endswith("Z")
            assert isinstance(event["packetsAtConn"], int)
        edges = named(events, "sfu.subscriber.connected")
        assert {(e["subscriberPeerId"], e["publisherPeerId"]) for e in edges} == pairs
        for edge in edges:
            assert set(edge) == {"room", "publisherPeerId", "subscriberPeerId", "connectedUtc",
                                 "packetsForwardedAtConn"}  # fmt: skip
            assert edge["room"] == "x"
            assert isinstance(edge["packetsForwardedAtConn"], int)
    finally:
        for peer in peers:
            await peer.close()
