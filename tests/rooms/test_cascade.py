"""The cascade (spec 3.3) against the simulated bridge and against an unreachable one; the
detector and preferences end to end; sfu-mode; the bridge's room-events callback."""

from __future__ import annotations

import socket
from typing import Any

import orjson
from sqlalchemy import event

from switchboard.bridge import protocol
from switchboard.platform.bridging.client import bridge_secret
from switchboard.platform.rooms import vnum
from switchboard.platform.rooms.endpoints import canonical_string
from switchboard.platform.whitelist import service as whitelist
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests import factories
from tests.rooms.conftest import Client, Server


async def join(server: Server, host: str, name: str, **extra: Any) -> Client:
    client = Client(await server.peer(host, "x"))
    await client.send(type="join", name=name, **extra)
    await client.expect("welcome")
    return client


async def set_sfu(runtime: Runtime, tenant: factories.TenantFixture, **values: str) -> None:
    async with runtime.db.transaction() as session:
        row = await tenants.require_by_name(session, tenant.name)
        for key, value in values.items():
            await tenants.set_setting(session, row, f"Phone:Sfu:{key}", value)


def named(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["event"] == name]


async def test_the_third_human_promotes_when_the_threshold_is_two(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    await set_sfu(runtime, acme, AutoPromoteHumanCount="2")
    first = await join(server, acme.host, "A")
    await join(server, acme.host, "B")
    grant = vnum.JoinGrant(acme.id, "x", "vnum-1")
    token = vnum.join_token(runtime, grant)
    ai = await join(server, acme.host, "AI", role="ai-vnum", token=token)  # no human: no promote
    third = await join(server, acme.host, "C")
    mode = await first.expect("mode")
    assert mode == {"type": "mode", "mode": "sfu", "reason": "auto-promote-join-human-count-3"}
    assert (await third.expect("mode"))["mode"] == "sfu"
    events = await hooks(5)
    assert named(events, "room.cascade.promoted") == [{
        "room": "x", "mode": "sfu", "reason": "auto-promote-join-human-count-3",
        "trigger": "auto-join", "humanCount": 3,
    }]  # fmt: skip
    # A fifth peer finds the room in SFU mode; its publisher offer is not SDP, the simulated
    # bridge's SFU refuses it, and the outcome is recorded.
    await ai.ws.close()  # makes room (the test's limit is 4 peers)
    await first.expect("peer-left")
    late = Client(await server.peer(acme.host, "x"))
    await late.send(type="join", name="D")
    assert (await late.expect("welcome"))["mode"] == "sfu"
    await late.send(type="sfu-offer", sdp="v=0 publisher")
    assert (await late.expect("error"))["code"] == "bad_sdp"
    offer = named(await hooks(8), "sfu.offer.received")
    assert offer == [{
        "room": "x", "peerId": offer[0]["peerId"], "role": "human", "offerLen": 13,
        "outcome": "failed", "code": "bad_sdp", "phase": "publish", "httpStatus": 400,
    }]  # fmt: skip


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_an_unreachable_bridge_keeps_mesh_and_migrates_nobody(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    runtime.settings = runtime.settings.model_copy(
        update={"bridge_url": f"http://127.0.0.1:{_closed_port()}", "bridge_secret": "s" * 32}
    )
    await set_sfu(runtime, acme, AutoPromoteHumanCount="2")
    first = await join(server, acme.host, "A")
    await join(server, acme.host, "B")
    await join(server, acme.host, "C")
    events = await hooks(4)
    [failed] = named(events, "room.cascade.failed")
    assert failed["error"].startswith("the media bridge is unreachable (ConnectError")
    assert len(failed["error"]) <= 200
    assert {k: v for k, v in failed.items() if k != "error"} == {
        "room": "x", "mode": "sfu", "reason": "auto-promote-join-human-count-3",
        "trigger": "auto-join", "humanCount": 3,
    }  # fmt: skip
    await first.send(type="leave")
    assert not [m for m in first.inbox if m["type"] == "mode"]
    late = Client(await server.peer(acme.host, "x"))
    await late.send(type="join", name="D")
    assert (await late.expect("welcome"))["mode"] == "mesh"


async def test_bandwidth_degraded_promotes(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    peers = [await join(server, acme.host, name) for name in ("A", "B", "C")]
    bad = {"abrMbps": 0.8, "lossPct": 7.5, "packetsSent": 400, "rttMs": 350}
    await peers[0].send(type="stats", **bad)
    await peers[1].send(type="stats", abrMbps=3.0, lossPct=0, packetsSent=10, rttMs=0)
    await peers[2].send(type="stats", **{**bad, "abrMbps": 1.2, "rttMs": 320})
    mode = await peers[0].expect("mode")
    assert mode["reason"] == "auto-promote-bandwidth-degraded-stressed-2-of-3"
    events = await hooks(5)
    [degraded] = named(events, "room.bandwidth.degraded")
    assert degraded == {
        "room": "x", "stressedCount": 2, "peerCount": 3, "humanCount": 3, "windowSec": 30,
        "triggerPeerId": degraded["triggerPeerId"],
        "sampleMetrics": {"abrMbps": 0.8, "lossPct": 7.5, "rttMs": 350},
    }  # fmt: skip
    assert named(events, "room.cascade.promoted") == [{
        "room": "x", "mode": "sfu", "reason": "auto-promote-bandwidth-degraded-stressed-2-of-3",
        "trigger": "auto-bandwidth", "humanCount": 3, "stressedCount": 2, "peerCount": 3,
    }]  # fmt: skip


async def test_a_changed_tunable_judges_the_next_report_and_reports_read_nothing_between(
    server: Server, acme: factories.TenantFixture, runtime: Runtime
) -> None:
    peers = [await join(server, acme.host, name) for name in ("A", "B", "C")]
    tenant_reads: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "FROM tenants" in statement:
            tenant_reads.append(statement)

    two_mbps = {"abrMbps": 2.0, "lossPct": 0, "packetsSent": 100, "rttMs": 20}
    event.listen(runtime.db.engine.sync_engine, "before_cursor_execute", count)
    try:
        for _ in range(10):  # healthy at the default 1.5 Mbps threshold
            await peers[0].send(type="stats", **two_mbps)
            await peers[1].send(type="stats", **two_mbps)
        for peer in peers[:2]:  # answered in order: the reports before it were handled
            await peer.send(type="candidate", to="nobody", candidate=None)
            assert (await peer.expect("error"))["code"] == "unknown_peer"
    finally:
        event.remove(runtime.db.engine.sync_engine, "before_cursor_execute", count)
    assert len(tenant_reads) <= 1
    await set_sfu(runtime, acme, StressBwMbpsThreshold="2.5")
    await peers[0].send(type="stats", **two_mbps)
    await peers[2].send(type="stats", **two_mbps)
    mode = await peers[0].expect("mode")
    assert mode["reason"] == "auto-promote-bandwidth-degraded-stressed-2-of-3"


async def test_a_failed_bandwidth_promote_names_its_trigger(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    """Decision 0804: the failed event carries the failed move's trigger, auto-bandwidth."""
    runtime.settings = runtime.settings.model_copy(
        update={"bridge_url": f"http://127.0.0.1:{_closed_port()}", "bridge_secret": "s" * 32}
    )
    peers = [await join(server, acme.host, name) for name in ("A", "B", "C")]
    bad = {"abrMbps": 0.8, "lossPct": 7.5, "packetsSent": 400, "rttMs": 350}
    await peers[0].send(type="stats", **bad)
    await peers[2].send(type="stats", **bad)
    events = await hooks(5)
    [failed] = named(events, "room.cascade.failed")
    assert failed["error"].startswith("the media bridge is unreachable")
    assert {k: v for k, v in failed.items() if k != "error"} == {
        "room": "x", "mode": "sfu", "reason": "auto-promote-bandwidth-degraded-stressed-2-of-3",
        "trigger": "auto-bandwidth",
    }  # fmt: skip
    assert not [m for m in peers[0].inbox if m["type"] == "mode"]


async def test_votes_shift_the_join_threshold(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    await set_sfu(runtime, acme, AutoPromoteHumanCount="3")
    first = await join(server, acme.host, "A", pref="prefer-sfu")
    second = await join(server, acme.host, "B")
    await second.send(type="preference", pref="prefer-sfu")
    [changed] = named(await hooks(3), "room.client.preference.changed")
    assert changed == {
        "room": "x", "peerId": changed["peerId"], "role": "human", "prevPref": "auto",
        "newPref": "prefer-sfu", "voteTally": {"auto": 0, "prefer-mesh": 0, "prefer-sfu": 2},
        "effectiveThreshold": 2,
    }  # fmt: skip
    await join(server, acme.host, "C")  # 2 humans >= 3 - 1 vote: the third promotes
    assert (await first.expect("mode"))["reason"] == "auto-promote-join-human-count-3"


async def test_sfu_mode_by_signature_and_bearer(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    peer = await join(server, acme.host, "A")
    async with runtime.db.transaction() as session:
        row = await tenants.require_by_name(session, acme.name)
        secret = runtime.box.open(row.signaling_secret)
    body = orjson.dumps({"reason": "town hall"})
    signature = whitelist.sign(secret, canonical_string("acme", "x", "sfu", len(body)))
    async with server.http(acme.host) as http:
        refused = await http.post("/signal.ashx?sfu-mode=sfu&room=x", content=body,
                                  headers={"X-Platform-Admin-Signature": "0" * 64})  # fmt: skip
        assert refused.status_code == 401
        assert refused.json()["error"] == "invalid_signature"
        promoted = await http.post("/signal.ashx?sfu-mode=sfu&room=x", content=body,
                                   headers={"X-Platform-Admin-Signature": signature})  # fmt: skip
        assert promoted.json() == {"ok": True, "tenant": "acme", "room": "x", "mode": "sfu",
                                   "changed": True, "error": ""}  # fmt: skip
        assert (await peer.expect("mode")) == {"type": "mode", "mode": "sfu",
                                               "reason": "town hall"}  # fmt: skip
        key = await factories.api_key(runtime, acme)
        demoted = await http.post("/signal.ashx?sfu-mode=mesh&room=x", json={"Reason": "later"},
                                  headers={"Authorization": f"Bearer {key}"})  # fmt: skip
        assert demoted.status_code == 200
        assert demoted.json()["mode"] == "mesh"
        # the whitelist keeps the other POSTs on the path
        assert (await http.post("/signal.ashx?whitelist=add")).status_code == 401
    events = await hooks(3)
    assert named(events, "room.cascade.promoted") == [{
        "room": "x", "mode": "sfu", "reason": "town hall", "trigger": "admin",
        "actor": "signature",
    }]  # fmt: skip
    assert named(events, "room.cascade.demoted") == [{
        "room": "x", "mode": "mesh", "reason": "later", "trigger": "admin",
        "actor": "admin",
    }]  # fmt: skip


async def test_sfu_mode_without_a_bridge_is_503_and_keeps_the_mode(
    server: Server, acme: factories.TenantFixture, runtime: Runtime
) -> None:
    runtime.settings = runtime.settings.model_copy(update={"bridge_url": "none"})
    await join(server, acme.host, "A")
    key = await factories.api_key(runtime, acme)
    async with server.http(acme.host) as http:
        answer = await http.post("/signal.ashx?sfu-mode=sfu&room=x",
                                 headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    assert answer.status_code == 503  # spec 7: no bridge configured (502: unreachable)
    reply = answer.json()
    assert (reply["ok"], reply["mode"], reply["changed"]) == (False, "mesh", False)
    assert "no media bridge is configured" in reply["error"]


async def test_room_events_from_the_bridge(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    secret = bridge_secret(runtime)
    published = protocol.RoomCallback(
        event_id="e1", tenant="acme", room="x", type="publisher-connected", peer_id="p_1",
        connected_utc="2026-01-01T12:00:00Z", packets_at_conn=12,
    )  # fmt: skip
    subscribed = protocol.RoomCallback(
        event_id="e2", tenant="acme", room="x", type="subscriber-connected",
        publisher_peer_id="p_1", subscriber_peer_id="p_2",
        connected_utc="2026-01-01T12:00:01Z", packets_forwarded_at_conn=40,
    )  # fmt: skip
    async with server.http() as http:
        for message in (published, subscribed):
            body = orjson.dumps(message.model_dump(mode="json"))
            headers = {protocol.SIGNATURE_HEADER: protocol.sign(secret, body)}
            answer = await http.post(protocol.ROOM_EVENTS_PATH, content=body, headers=headers)
            assert answer.status_code == 200, answer.text
        forged = await http.post(protocol.ROOM_EVENTS_PATH, content=body,
                                 headers={protocol.SIGNATURE_HEADER: "sha256=00"})  # fmt: skip
        assert forged.status_code == 401
    events = await hooks(2)
    assert named(events, "sfu.publisher.connected") == [{
        "room": "x", "peerId": "p_1", "role": "human", "connectedUtc": "2026-01-01T12:00:00Z",
        "packetsAtConn": 12,
    }]  # fmt: skip
    assert named(events, "sfu.subscriber.connected") == [{
        "room": "x", "publisherPeerId": "p_1", "subscriberPeerId": "p_2",
        "connectedUtc": "2026-01-01T12:00:01Z", "packetsForwardedAtConn": 40,
    }]  # fmt: skip
