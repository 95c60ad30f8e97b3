"""The room paths of the bridge against a real Janus: aiortc peers publish synthetic audio and
video through it, a subscriber receives the RTP, the platform's endpoint receives the
connection reports; and the refusals."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import AudioStreamTrack, MediaStreamTrack, VideoStreamTrack

from switchboard.bridge import protocol
from tests.mediabridge.components import BridgeProcess, free_port
from tests.mediabridge.rooms.conftest import RoomEvents, signed, start_bridge

pytestmark = pytest.mark.slow


async def until(check: object, within: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():  # type: ignore[operator]
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def inbound_packets(pc: RTCPeerConnection) -> int:
    report = await pc.getStats()
    return sum(s.packetsReceived for s in report.values() if s.type == "inbound-rtp")


async def test_a_subscriber_receives_a_publisher_through_janus(
    bridge: BridgeProcess, room_events: RoomEvents
) -> None:
    tenant, room = "acme", "standup-" + secrets.token_hex(3)
    ref = {"tenant": tenant, "room": room}
    publisher = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    subscriber = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    received: list[MediaStreamTrack] = []
    subscriber.on("track", received.append)
    try:
        async with httpx.AsyncClient(base_url=bridge.url, timeout=20) as client:
            reply = await signed(client, protocol.ROOM_PROMOTE_PATH, {**ref, "peers": ["p1", "p2"]})
            assert reply.status_code == 200, reply.text
            assert reply.json()["mode"] == "sfu"
            assert reply.json()["sfuRoom"].isdigit()
            # promoting again is harmless: same SFU room
            again = await signed(client, protocol.ROOM_PROMOTE_PATH, ref)
            assert again.json()["sfuRoom"] == reply.json()["sfuRoom"]

            publisher.addTrack(AudioStreamTrack())
            publisher.addTrack(VideoStreamTrack())
            await publisher.setLocalDescription(await publisher.createOffer())
            reply = await signed(client, protocol.ROOM_PUBLISHERS_PATH, {
                **ref, "peerId": "p1", "role": "human", "sdp": publisher.localDescription.sdp,
            })  # fmt: skip
            assert reply.status_code == 200, reply.text
            answer = reply.json()["sdp"]
            assert "a=candidate" in answer  # not trickled
            await publisher.setRemoteDescription(RTCSessionDescription(answer, "answer"))
            await until(lambda: publisher.connectionState == "connected")
            await until(lambda: any(e["type"] == "publisher-connected"
                                    for e in room_events.events))  # fmt: skip

            reply = await signed(client, protocol.ROOM_SUBSCRIBERS_PATH, {
                **ref, "publisherPeerId": "p1", "subscriberPeerId": "p2",
            })  # fmt: skip
            assert reply.status_code == 200, reply.text
            await subscriber.setRemoteDescription(
                RTCSessionDescription(reply.json()["sdp"], "offer")
            )
            await subscriber.setLocalDescription(await subscriber.createAnswer())
            reply = await signed(client, protocol.ROOM_SUBSCRIBER_ANSWER_PATH, {
                **ref, "publisherPeerId": "p1", "subscriberPeerId": "p2",
                "sdp": subscriber.localDescription.sdp,
            })  # fmt: skip
            assert reply.status_code == 200, reply.text
            assert reply.json() == {}
            await until(lambda: subscriber.connectionState == "connected")
            assert sorted(t.kind for t in received) == ["audio", "video"]
            video = next(t for t in received if t.kind == "video")
            await asyncio.wait_for(video.recv(), 10)  # a decoded frame came through Janus
            first = await inbound_packets(subscriber)
            await asyncio.sleep(0.5)
            assert await inbound_packets(subscriber) > first > 0
            await until(lambda: any(e["type"] == "subscriber-connected"
                                    for e in room_events.events))  # fmt: skip

            published = next(e for e in room_events.events if e["type"] == "publisher-connected")
            assert published["tenant"] == tenant
            assert published["room"] == room
            assert published["peerId"] == "p1"
            assert published["protocol"] == 1
            assert str(published["connectedUtc"]).endswith("Z")
            assert isinstance(published["packetsAtConn"], int)
            edge = next(e for e in room_events.events if e["type"] == "subscriber-connected")
            assert (edge["publisherPeerId"], edge["subscriberPeerId"]) == ("p1", "p2")
            assert isinstance(edge["packetsForwardedAtConn"], int)
            assert room_events.bad_signatures == 0

            reply = await signed(client, protocol.ROOM_LEAVE_PATH, {**ref, "peerId": "p1"})
            assert reply.status_code == 200
            assert reply.json() == {}
            # the publisher's feed is gone with it
            reply = await signed(client, protocol.ROOM_SUBSCRIBERS_PATH, {
                **ref, "publisherPeerId": "p1", "subscriberPeerId": "p3",
            })  # fmt: skip
            assert reply.status_code == 404
            assert reply.json() == {"code": "unknown_peer", "phase": "subscribe",
                                    "error": reply.json()["error"]}  # fmt: skip
            reply = await signed(client, protocol.ROOM_DEMOTE_PATH, ref)
            assert reply.status_code == 200
            assert reply.json() == {"mode": "mesh"}
    finally:
        await publisher.close()
        await subscriber.close()


async def test_refusals_carry_a_code_and_the_phase(bridge: BridgeProcess) -> None:
    ref = {"tenant": "acme", "room": "refusals-" + secrets.token_hex(3)}
    async with httpx.AsyncClient(base_url=bridge.url, timeout=20) as client:
        reply = await signed(client, protocol.ROOM_PROMOTE_PATH, ref, secret="not-the-secret")
        assert reply.status_code == 401
        assert reply.json()["code"] == "bad_signature"
        assert reply.json()["phase"] == "promote"

        reply = await signed(client, protocol.ROOM_PUBLISHERS_PATH, {**ref, "peerId": "p1"})
        assert reply.status_code == 400
        assert reply.json()["code"] == "invalid_request"
        assert reply.json()["phase"] == "publish"

        reply = await signed(client, protocol.ROOM_PUBLISHERS_PATH,
                             {**ref, "peerId": "p1", "sdp": "v=0\r\n"})  # fmt: skip
        assert reply.status_code == 404
        assert reply.json()["code"] == "unknown_room"

        assert (await signed(client, protocol.ROOM_PROMOTE_PATH, ref)).status_code == 200
        reply = await signed(client, protocol.ROOM_PUBLISHERS_PATH,
                             {**ref, "peerId": "p1", "sdp": "v=0\r\nnot an offer\r\n"})  # fmt: skip
        assert reply.status_code == 400, reply.text
        assert reply.json()["code"] == "bad_sdp"
        assert reply.json()["phase"] == "publish"

        reply = await signed(client, protocol.ROOM_SUBSCRIBER_ANSWER_PATH, {
            **ref, "publisherPeerId": "p1", "subscriberPeerId": "p2", "sdp": "v=0\r\n",
        })  # fmt: skip
        assert reply.status_code == 404
        assert reply.json()["phase"] == "answer"
        reply = await signed(client, protocol.ROOM_DEMOTE_PATH, ref)
        assert reply.status_code == 200
        reply = await signed(client, protocol.ROOM_AI_PEER_PATH, {**ref, "callId": "c1"})
        assert reply.status_code == 400
        assert reply.json()["phase"] == "ai-peer"


async def test_a_janus_that_does_not_answer_is_sfu_unreachable(
    tmp_path: Path, platform_port: int
) -> None:
    down = start_bridge(
        tmp_path, f'janus = "http://127.0.0.1:{free_port()}/janus"', platform_port, {}
    )
    try:
        async with httpx.AsyncClient(base_url=down.url, timeout=20) as client:
            reply = await signed(client, protocol.ROOM_PROMOTE_PATH,
                                 {"tenant": "acme", "room": "down"})  # fmt: skip
            assert reply.status_code == 503
            assert reply.json()["code"] == "sfu_unreachable"
            assert reply.json()["phase"] == "promote"
    finally:
        down.kill()


async def test_the_bridge_runs_its_own_janus(tmp_path: Path, platform_port: int) -> None:
    lo = 45000 + (os.getpid() % 200) * 20
    local = start_bridge(tmp_path, f'janus = "local"\nrtp_ports = "{lo}-{lo + 19}"',
                         platform_port, {})  # fmt: skip
    assert local.process is not None
    janus: list[int] = []
    try:
        janus = [pid for pid, exe in children(local.process.pid) if exe.endswith("janus")]
        assert janus, "the bridge started no janus"
        assert (await janus_info(janus[0]))["ice-lite"] is True  # no stun_server: ICE lite
        async with httpx.AsyncClient(base_url=local.url, timeout=20) as client:
            reply = await signed(client, protocol.ROOM_PROMOTE_PATH,
                                 {"tenant": "acme", "room": "local"})  # fmt: skip
            assert reply.status_code == 200, reply.text
            # Janus dies: the bridge starts another, which knows no room until promoted again
            os.kill(janus[0], signal.SIGKILL)
            await until(lambda: janus[0] not in running(janus))
            ref = {"tenant": "acme", "room": "local", "peerId": "p1", "sdp": "v=0\r\n"}
            codes: list[str] = []

            async def unknown_room_again() -> bool:
                answer = await signed(client, protocol.ROOM_PUBLISHERS_PATH, ref)
                codes.append(answer.json()["code"])
                return codes[-1] == "unknown_room"

            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while not await unknown_room_again():
                assert loop.time() < deadline, codes
                await asyncio.sleep(0.2)
            assert set(codes) <= {"sfu_unreachable", "unknown_room"}
            janus += [pid for pid, exe in children(local.process.pid) if exe.endswith("janus")]
            assert len(janus) == 2
            reply = await signed(client, protocol.ROOM_PROMOTE_PATH,
                                 {"tenant": "acme", "room": "local"})  # fmt: skip
            assert reply.status_code == 200, reply.text
    finally:
        local.process.terminate()  # a clean stop stops Janus too
        local.process.wait(15)
    assert not running(janus)


async def janus_info(pid: int) -> dict[str, Any]:
    """What the Janus of process ``pid`` says of itself, from the API its configuration names."""
    argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
    folder = Path(argv[argv.index(b"--configs-folder") + 1].decode())
    http = (folder / "janus.transport.http.jcfg").read_text()
    port = re.search(r"^\s*port = (\d+)", http, re.MULTILINE)
    assert port is not None, http
    async with httpx.AsyncClient(timeout=10) as client:
        info = await client.get(f"http://127.0.0.1:{port[1]}/janus/info")
    return dict(info.json())


def children(pid: int) -> list[tuple[int, str]]:
    """``pid``'s child processes and their executables (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append((int(entry.name), os.readlink(entry / "exe")))
        except (OSError, IndexError, ValueError):
            continue
    return found


def running(pids: list[int]) -> list[int]:
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]
