"""One aiortc peer of a room's WebRTC mesh, joined over the platform's signaling WebSocket
(docs/rooms.md): the AI peer of a browser's call to a virtual number, on the media bridge and in
the simulated bridge.

It joins with a name, a role and a token, offers a connection to every peer of its ``welcome``
(the newcomer offers), answers the offers it receives, adds the candidates relayed to it, and
sends one track on every connection. ``connected`` is set once a connection is up; ``gone`` once
nobody else is in the room: the ``welcome`` lists no peer, the last far peer left, or the socket
closed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

import aiohttp
import orjson
from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamTrack
from aiortc.sdp import candidate_from_sdp

HEARTBEAT_SEC = 20
# What joining or staying in the room may raise when the signaling server cannot be reached.
SIGNALING_ERRORS = (aiohttp.ClientError, OSError, TimeoutError)


def ice_servers(listed: object) -> list[RTCIceServer]:
    """The ``welcome``'s ``iceServers`` (the browser's format: ``urls``, ``username``,
    ``credential``), the ones that parse."""
    found = []
    for server in listed if isinstance(listed, list) else []:
        if isinstance(server, dict) and isinstance(server.get("urls"), str | list):
            found.append(RTCIceServer(
                urls=server["urls"], username=server.get("username"),
                credential=server.get("credential"),
            ))  # fmt: skip
    return found


class MeshPeer:
    """``async with MeshPeer(...) as mesh``: joined while inside; on the way out it sends
    ``leave`` and closes its connections and the socket. ``listen`` is run on every audio track
    a far peer sends (until that track ends)."""

    def __init__(
        self,
        signal_url: str,
        *,
        name: str,
        role: str,
        token: str,
        track: MediaStreamTrack,
        listen: Callable[[MediaStreamTrack], Awaitable[None]],
    ) -> None:
        self.signal_url = signal_url
        self.join = {"type": "join", "name": name, "role": role, "token": token}
        self.track = track
        self.listen = listen
        self.peer_id = ""
        self.pcs: dict[str, RTCPeerConnection] = {}
        self.ice_servers: list[RTCIceServer] = []
        self.connected = asyncio.Event()
        self.gone = asyncio.Event()
        self._http: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> MeshPeer:
        self._http = aiohttp.ClientSession()
        try:
            self._ws = await self._http.ws_connect(self.signal_url, heartbeat=HEARTBEAT_SEC)
            await self._send(self.join)
        except BaseException:
            await self._http.close()
            raise
        self._spawn(self._read(self._ws))
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._send({"type": "leave"})
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for pc in list(self.pcs.values()):
            await pc.close()
        if self._ws is not None:
            await self._ws.close()
        if self._http is not None:
            await self._http.close()

    async def wait_connected(self, within: float) -> bool:
        """True once a connection is up; False when the far peers left first or ``within``
        seconds passed."""
        connected = asyncio.ensure_future(self.connected.wait())
        gone = asyncio.ensure_future(self.gone.wait())
        try:
            await asyncio.wait(
                {connected, gone}, timeout=within, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            connected.cancel()
            gone.cancel()
        return self.connected.is_set()

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, data: dict[str, Any]) -> None:
        assert self._ws is not None
        await self._ws.send_str(orjson.dumps(data).decode())

    async def _read(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        """Signaling messages until the socket closes (then the far peers count as gone)."""
        try:
            async for message in ws:
                if message.type != aiohttp.WSMsgType.TEXT:
                    continue
                try:
                    data = orjson.loads(message.data)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(data, dict):
                    await self._on(data)
        finally:
            self.gone.set()

    async def _on(self, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "welcome":
            self.peer_id = str(data.get("peerId", ""))
            self.ice_servers = ice_servers(data.get("iceServers"))
            for peer in data.get("peers") or []:
                other = str(peer.get("peerId", ""))
                if other and other != self.peer_id:
                    pc = self._pc(other)
                    await pc.setLocalDescription(await pc.createOffer())
                    await self._send({"type": "offer", "to": other,
                                      "sdp": pc.localDescription.sdp})  # fmt: skip
            if not self.pcs:  # the caller left before this peer came
                self.gone.set()
        elif kind == "offer":
            other = str(data.get("from", ""))
            old = self.pcs.pop(other, None)
            if old is not None:
                await old.close()
            pc = self._pc(other)
            await pc.setRemoteDescription(RTCSessionDescription(str(data["sdp"]), "offer"))
            await pc.setLocalDescription(await pc.createAnswer())
            await self._send({"type": "answer", "to": other, "sdp": pc.localDescription.sdp})
        elif kind == "answer":
            offered = self.pcs.get(str(data.get("from", "")))
            if offered is not None and offered.signalingState == "have-local-offer":
                answer = RTCSessionDescription(str(data["sdp"]), "answer")
                await offered.setRemoteDescription(answer)
        elif kind == "candidate":
            target = self.pcs.get(str(data.get("from", "")))
            found = data.get("candidate")
            if target is not None and isinstance(found, dict) and found.get("candidate"):
                candidate = candidate_from_sdp(str(found["candidate"]).removeprefix("candidate:"))
                candidate.sdpMid = found.get("sdpMid")
                candidate.sdpMLineIndex = found.get("sdpMLineIndex")
                await target.addIceCandidate(candidate)
        elif kind == "peer-left":
            left = self.pcs.pop(str(data.get("peerId", "")), None)
            if left is not None:
                await left.close()
            if not self.pcs:
                self.gone.set()

    def _pc(self, other: str) -> RTCPeerConnection:
        pc = RTCPeerConnection(RTCConfiguration(iceServers=self.ice_servers))
        self.pcs[other] = pc
        pc.addTrack(self.track)

        @pc.on("connectionstatechange")
        def changed() -> None:
            if pc.connectionState == "connected":
                self.connected.set()

        @pc.on("track")
        def on_track(track: MediaStreamTrack) -> None:
            if track.kind == "audio":
                self._spawn(self.listen(track))

        return pc
