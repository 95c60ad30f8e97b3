"""A browser call to a virtual number: the bridge's AI peer joins the room over a signaling
WebSocket speaking the rooms contract (a minimal relay here: the platform's far end of that
protocol), connects to an aiortc "browser" that speaks espeak-ng speech, and talks back with
the bridge's engine (tone); the calls' callbacks arrive at a real HTTP server."""

from __future__ import annotations

import asyncio
import fractions
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx
import numpy as np
import orjson
import pytest
from aiohttp import WSCloseCode, web
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
from av import AudioFrame

from switchboard.bridge import protocol
from switchboard.mediabridge.engines.speech import espeak_voice, synthesize
from tests.aioserve import serving
from tests.mediabridge.components import BridgeProcess
from tests.mediabridge.rooms.conftest import RoomEvents, signed

pytestmark = pytest.mark.slow
JOIN_TOKEN = "join-" + secrets.token_hex(8)


@dataclass
class Relay:
    """The signaling contract's server side for one room: join → welcome, peer-joined,
    offer/answer/candidate relayed with ``from``, peer-left on leave or close."""

    url: str = ""
    peers: dict[str, web.WebSocketResponse] = field(default_factory=dict)
    joined: list[dict[str, Any]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        peer_id = ""
        async for message in ws:
            data = orjson.loads(message.data)
            if data["type"] == "join" and not peer_id:
                if data["role"] == "ai-vnum" and data.get("token") != JOIN_TOKEN:
                    await ws.close(code=WSCloseCode.POLICY_VIOLATION, message=b"bad token")
                    break
                peer_id = "peer-" + secrets.token_hex(3)
                peer = {"peerId": peer_id, "name": data["name"], "role": data["role"],
                        "verified": data["role"] == "ai-vnum"}  # fmt: skip
                others = [p for p in self.joined if p["peerId"] in self.peers]
                await ws.send_json({"type": "welcome", "peerId": peer_id,
                                    "room": request.query["room"], "mode": "mesh",
                                    "peers": others, "iceServers": []})  # fmt: skip
                for other in self.peers.values():
                    await other.send_json({"type": "peer-joined", "peer": peer})
                self.peers[peer_id] = ws
                self.joined.append(peer)
            elif data["type"] in ("offer", "answer", "candidate") and data["to"] in self.peers:
                relayed = {k: v for k, v in data.items() if k != "to"}
                await self.peers[data["to"]].send_json({**relayed, "from": peer_id})
            elif data["type"] == "leave":
                break
        self.peers.pop(peer_id, None)
        for other in self.peers.values():
            await other.send_json({"type": "peer-left", "peerId": peer_id})
        return ws


@pytest.fixture
async def relay() -> AsyncIterator[Relay]:
    found = Relay()
    app = web.Application()
    app.router.add_get("/signal.ashx", found.handle)
    async with serving(app) as base:
        found.url = base.replace("http://", "ws://", 1) + "/signal.ashx"
        yield found


class SpeechTrack(MediaStreamTrack):
    """The browser's microphone: speech once, then silence (8 kHz frames; aiortc encodes)."""

    kind = "audio"

    def __init__(self, frames: list[bytes]) -> None:
        super().__init__()
        self.frames = list(frames)
        self.start = 0.0
        self.pts = -1

    async def recv(self) -> AudioFrame:
        if self.pts < 0:
            self.start, self.pts = time.time(), 0
        else:
            self.pts += 160
            await asyncio.sleep(self.start + self.pts / 8000 - time.time())
        frame = AudioFrame(format="s16", layout="mono", samples=160)
        frame.planes[0].update(self.frames.pop(0) if self.frames else bytes(320))
        frame.pts, frame.sample_rate = self.pts, 8000
        frame.time_base = fractions.Fraction(1, 8000)
        return frame


async def test_a_browser_talks_to_the_ai_peer(
    bridge: BridgeProcess, room_events: RoomEvents, relay: Relay, platform_port: int
) -> None:
    room = "vnum-" + secrets.token_hex(3)
    speech = await synthesize("Hello, I would like to book a table.", espeak_voice("en", ""))
    browser = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    browser.addTrack(SpeechTrack(speech))
    heard: list[float] = []

    async def listen(track: MediaStreamTrack) -> None:
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            assert isinstance(frame, AudioFrame)
            samples = frame.to_ndarray().astype(np.float64)
            heard.append(float(np.sqrt(np.mean(samples**2))))

    listening: list[asyncio.Task[None]] = []
    browser.on("track", lambda track: listening.append(asyncio.ensure_future(listen(track))))
    async with aiohttp.ClientSession() as http, http.ws_connect(f"{relay.url}?room={room}") as ws:
        await ws.send_json({"type": "join", "name": "Ada", "role": "human"})
        welcome = await ws.receive_json(timeout=5)
        assert welcome["type"] == "welcome"
        assert welcome["peers"] == []
        callback = f"http://127.0.0.1:{platform_port}{protocol.CALLBACK_PATH}"
        async with httpx.AsyncClient(base_url=bridge.url, timeout=20) as client:
            reply = await signed(client, protocol.ROOM_AI_PEER_PATH, {
                "tenant": "acme", "room": room, "callId": "vnum-call-1",
                "signalUrl": f"{relay.url}?room={room}", "joinToken": JOIN_TOKEN,
                "callbackUrl": callback, "number": "+15550123", "name": "Reception",
                "voice": "Kore", "language": "en-US", "model": "offline", "maxSeconds": 30,
                "systemPrompt": "You take table bookings.", "apiKey": "",
            })  # fmt: skip
            assert reply.status_code == 200, reply.text
        joined = await ws.receive_json(timeout=10)
        assert joined["type"] == "peer-joined"
        assert joined["peer"]["role"] == "ai-vnum"
        offer = await ws.receive_json(timeout=10)
        assert offer["type"] == "offer"
        assert "a=candidate" in offer["sdp"]  # not trickled
        await browser.setRemoteDescription(RTCSessionDescription(offer["sdp"], "offer"))
        await browser.setLocalDescription(await browser.createAnswer())
        await ws.send_json({"type": "answer", "to": offer["from"],
                            "sdp": browser.localDescription.sdp})  # fmt: skip
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while not any(c["type"] == "inbound-ended" for c in room_events.calls):
            assert loop.time() < deadline, "the AI peer did not end the call"
            await asyncio.sleep(0.1)
    await browser.close()
    for task in listening:
        task.cancel()

    kinds = [c["type"] for c in room_events.calls]
    assert kinds == ["inbound-ai-started", "inbound-ended"]
    ended = room_events.calls[1]
    assert ended["source"] == "vnum"
    assert ended["room"] == room
    assert ended["tenant"] == "acme"
    assert ended["number"] == "+15550123"
    assert ended["callId"] == "vnum-call-1"
    assert ended["ended"]["outcome"] == "finished"
    assert ended["ended"]["answered"] is True
    assert ended["ended"]["inputTurns"] == 1  # the tone engine heard the browser speak
    assert ended["ended"]["talkSec"] >= 2
    speakers = [turn["speaker"] for turn in ended["ended"]["turns"]]
    assert speakers == ["AI", "Caller"]
    assert max(heard) > 1000  # the engine's tone reached the browser
    assert room_events.bad_signatures == 0


async def test_a_browser_that_leaves_first_is_an_empty_room(
    bridge: BridgeProcess, room_events: RoomEvents, relay: Relay, platform_port: int
) -> None:
    room = "vnum-" + secrets.token_hex(3)
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(f"{relay.url}?room={room}") as ws:
            await ws.send_json({"type": "join", "name": "Ada", "role": "human"})
            await ws.receive_json(timeout=5)
            async with httpx.AsyncClient(base_url=bridge.url, timeout=20) as client:
                reply = await signed(client, protocol.ROOM_AI_PEER_PATH, {
                    "tenant": "acme", "room": room, "callId": "vnum-call-2",
                    "signalUrl": f"{relay.url}?room={room}", "joinToken": JOIN_TOKEN,
                    "callbackUrl": f"http://127.0.0.1:{platform_port}{protocol.CALLBACK_PATH}",
                    "number": "+15550123", "maxSeconds": 30,
                })  # fmt: skip
                assert reply.status_code == 200, reply.text
            offer = await ws.receive_json(timeout=10)
            while offer["type"] != "offer":
                offer = await ws.receive_json(timeout=10)
            await ws.send_json({"type": "leave"})  # hangs up before answering
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while not room_events.calls:
            assert loop.time() < deadline, "the AI peer did not report the call"
            await asyncio.sleep(0.05)
    [ended] = room_events.calls
    assert ended["type"] == "inbound-ended"
    assert ended["ended"]["outcome"] == "empty-room"
    assert ended["ended"]["answered"] is False
    assert ended["room"] == room
