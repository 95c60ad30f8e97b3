"""RTP for one call leg on aiortp: G.711 μ-law (PT 0) or A-law (PT 8), 20 ms packets, aiortp's
jitter buffer on the way in, RFC 4733 telephone events (PT 101) received and logged.

A leg's port pair comes from ``--rtp-ports`` before the SDP is written; the socket is bound when
the far end's address is known (the answer, or the offer of an inbound call). The far end's SDP
must name a unicast IPv4 address and a port (``negotiate``), and its packets are taken only from
the hosts of that call: the SDP's, or the one its SIP comes from (``_Session``, decision 0326).
A new offer mid-call may move the far end's media or hold the leg (``RtpLeg.change``, decision
0328): a held leg sends nothing, and its far end may send nothing without the call timing out.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from aiortp import PortAllocator, RTPSession
from aiosipua import SdpMessage
from aiosipua.sdp import MediaDescription

from switchboard.mediabridge.engines.base import FRAME_BYTES, FRAME_MS

log = logging.getLogger("switchboard.mediabridge.media")

CODECS = {0: "PCMU", 8: "PCMA"}
# the directions in which the bridge sends (RFC 3264 §6.1, from its own side)
SENDING = ("sendrecv", "sendonly")
DTMF_PT = 101
SILENCE = b"\x00" * FRAME_BYTES
# frames waiting for the engine: beyond 200 ms the oldest go (the far end's clock runs fast)
INBOX_FRAMES = 10
# an RTP header is 12 bytes, an RTCP one 8; 1500 bytes hold 180 ms of G.711, more than any
# far end puts in one packet of this call
RTP_HEADER, RTCP_HEADER, MAX_PACKET = 12, 8, 1500


class NoPorts(Exception):
    """Every port pair of ``--rtp-ports`` is in use."""


def parse_range(text: str) -> tuple[int, int]:
    """``LO-HI``: an even low port and at least one pair of ports."""
    lo_text, sep, hi_text = text.partition("-")
    if not sep or not lo_text.strip().isdigit() or not hi_text.strip().isdigit():
        raise ValueError(f"not a port range LO-HI: {text!r}")
    lo, hi = int(lo_text), int(hi_text)
    if not 1024 <= lo < hi <= 65535 or hi - lo < 2:
        raise ValueError(f"the RTP range must lie in 1024-65535 and hold a pair: {text!r}")
    return lo, hi


@dataclass(frozen=True)
class Negotiated:
    remote: tuple[str, int]
    payload_type: int
    dtmf: int | None


def negotiate(sdp: SdpMessage | None, peer: str) -> Negotiated | None:
    """The first G.711 codec the far end lists, and its telephone-event type if any; ``None``
    when there is none or the SDP names no address the bridge may send to. ``peer`` is the host
    the far end's SIP comes from: only a peer on loopback may name a loopback address."""
    if sdp is None or sdp.audio is None or sdp.rtp_address is None:
        return None
    if not sendable(sdp.rtp_address, peer):
        return None
    codecs, dtmf = formats(sdp.audio)
    if not codecs:
        return None
    return Negotiated(remote=sdp.rtp_address, payload_type=codecs[0], dtmf=dtmf)


def formats(audio: MediaDescription) -> tuple[list[int], int | None]:
    """The G.711 payload types of an audio stream, in its order, and its telephone-event type."""
    names = {c.payload_type: c.encoding_name.upper() for c in audio.codecs}
    dtmf = next((pt for pt, name in names.items() if name == "TELEPHONE-EVENT"), None)
    codecs = []
    for fmt in audio.formats:
        pt = int(fmt) if fmt.isdigit() else -1
        if pt in CODECS and names.get(pt, CODECS[pt]) == CODECS[pt]:
            codecs.append(pt)
    return codecs, dtmf


def sendable(remote: tuple[str, int], peer: str) -> bool:
    """A unicast IPv4 address and a port: not a host name (sending would resolve it, blocking,
    for every packet), not IPv6 (the media sockets are IPv4), not 0.0.0.0, multicast or
    broadcast, and loopback only for a peer on loopback."""
    host, port = remote
    try:
        address = ipaddress.IPv4Address(host)
    except ValueError:
        return False
    if not 0 < port <= 65535:
        return False
    if address.is_unspecified or address.is_multicast or address.is_reserved:
        return False
    return not address.is_loopback or _on_loopback(peer)


def _on_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"


class _Session(RTPSession):
    """aiortp's session, taking the far end's packets only from ``hosts`` and only when they
    look like RTP (version 2, a whole header, at most ``MAX_PACKET`` bytes): anyone who finds the
    port could otherwise speak into the call, and with symmetric RTP take its audio away."""

    hosts: frozenset[str] = frozenset()
    heard_at = 0.0  # time.monotonic() of the last packet taken
    ignored = 0

    def _handle_rtp(self, data: bytes, addr: tuple[str, int]) -> None:
        if self._admit(data, addr, RTP_HEADER):
            super()._handle_rtp(data, addr)

    def _handle_rtcp(self, data: bytes, addr: tuple[str, int]) -> None:
        if self._admit(data, addr, RTCP_HEADER):
            super()._handle_rtcp(data, addr)

    def _admit(self, data: bytes, addr: tuple[str, int], header: int) -> bool:
        if addr[0] in self.hosts and header <= len(data) <= MAX_PACKET and data[0] >> 6 == 2:
            self.heard_at = time.monotonic()
            return True
        if not self.ignored:
            log.info("media from %s:%s ignored: this call's far end is %s", addr[0], addr[1],
                     ", ".join(sorted(self.hosts)))  # fmt: skip
        self.ignored += 1
        return False

    def use_dtmf(self, payload_type: int) -> None:
        """The far end's telephone-event type, after a new offer named another."""
        self._dtmf_payload_type = payload_type


@dataclass
class RtpLeg:
    """One leg's media. The far end's audio, as 20 ms PCM frames, goes to ``on_frame`` when it
    is set (relaying between two legs), otherwise into a short queue that ``take()`` empties one
    frame per tick (silence when nothing came: the engine hears time pass either way)."""

    host: str  # written in SDP
    port: int
    allocator: PortAllocator
    bind_host: str = ""  # the socket's address (the --sip host), when it differs
    session: _Session | None = None
    remote: tuple[str, int] = ("", 0)  # the far end's address in its SDP
    peers: frozenset[str] = frozenset()  # the hosts its SIP comes from
    direction: str = "sendrecv"  # the bridge's, as its last SDP said (decision 0328)
    on_frame: Callable[[bytes], None] | None = None
    digits: list[str] = field(default_factory=list)
    _inbox: deque[bytes] = field(default_factory=lambda: deque(maxlen=INBOX_FRAMES))
    _flowing: asyncio.Event = field(default_factory=asyncio.Event)  # set unless held
    _pending: bytes = b""
    _sent: int = 0
    _received: int = 0

    @classmethod
    async def reserve(cls, host: str, bind_host: str, allocator: PortAllocator) -> RtpLeg:
        try:
            port, _rtcp = await allocator.allocate()
        except RuntimeError:  # aiortp: "No available port pair in range"
            raise NoPorts("every port of --rtp-ports is in use") from None
        return cls(host=host, port=port, allocator=allocator, bind_host=bind_host)

    async def open(self, negotiated: Negotiated, peers: Iterable[str] = ()) -> None:
        """Bind the leg; media is taken from the SDP's host and ``peers`` (where its SIP comes
        from), any port of theirs (NAT), and sent back where it last came from."""
        session = await _Session.create(
            local_addr=(self.bind_host or self.host, self.port),
            remote_addr=negotiated.remote,
            payload_type=negotiated.payload_type,
            dtmf_payload_type=negotiated.dtmf if negotiated.dtmf is not None else DTMF_PT,
            jitter_capacity=16,
            jitter_prefetch=3,
            symmetric_rtp=True,
        )
        assert isinstance(session, _Session)  # aiortp's factory builds ``cls``
        self.remote, self.peers = negotiated.remote, frozenset(peers)
        session.hosts = frozenset({negotiated.remote[0], *self.peers})
        session.heard_at = time.monotonic()
        self._flowing.set()
        session.on_audio = self._audio
        session.on_dtmf = self._dtmf
        self.session = session

    def _audio(self, pcm: bytes, _timestamp: int) -> None:
        data = self._pending + pcm
        while len(data) >= FRAME_BYTES:
            if self.on_frame is not None:
                self.on_frame(data[:FRAME_BYTES])
            else:
                self._inbox.append(data[:FRAME_BYTES])
            data = data[FRAME_BYTES:]
        self._pending = data

    def _dtmf(self, digit: str, duration: int) -> None:
        self.digits.append(digit)
        log.info("DTMF digit %s received (%d ms)", digit, duration // 8)

    def take(self) -> bytes:
        """The next frame the far end sent, or silence."""
        return self._inbox.popleft() if self._inbox else SILENCE

    def send(self, frame: bytes | None) -> None:
        if self.session is not None and self.sending:
            self.session.send_audio_pcm_auto(frame or SILENCE)

    @property
    def sending(self) -> bool:
        """False while the far end holds the call (it offered ``sendonly`` or ``inactive``)."""
        return self.direction in SENDING

    def change(self, negotiated: Negotiated, direction: str) -> None:
        """What a new offer or answer mid-call says: the far end's media address (which becomes
        the accepted source, with the hosts of its SIP), its telephone-event type, and the
        bridge's direction. Media flowing again after a hold starts the RTP timeout afresh."""
        session = self.session
        if session is None:
            return
        if negotiated.remote != self.remote:
            log.info("media moved from %s:%s to %s:%s", *self.remote, *negotiated.remote)
            self.remote = negotiated.remote
            session.update_remote(negotiated.remote)
            session.hosts = frozenset({negotiated.remote[0], *self.peers})
        session.use_dtmf(negotiated.dtmf if negotiated.dtmf is not None else DTMF_PT)
        if direction != self.direction:
            log.info("media %s (was %s)", direction, self.direction)
        self.direction = direction
        if direction == "sendrecv" and not self._flowing.is_set():
            session.heard_at = time.monotonic()
            self._flowing.set()
        elif direction != "sendrecv":
            self._flowing.clear()

    @property
    def packets_sent(self) -> int:
        return int(self.session.stats["packets_sent"]) if self.session else self._sent

    @property
    def packets_received(self) -> int:
        if self.session is None:
            return self._received
        return int(self.session.stats.get("packets_received", 0))

    async def silent(self, seconds: float) -> None:
        """Return once the far end has sent neither RTP nor RTCP for ``seconds`` (0: never).
        The clock stops while the stream is not ``sendrecv``: a held far end sends nothing."""
        session = self.session
        if seconds <= 0 or session is None:
            await asyncio.Event().wait()
            return
        while True:  # heard_at moves on with every packet: sleep until it may have expired
            if not self._flowing.is_set():
                await self._flowing.wait()
                continue
            left = session.heard_at + seconds - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(left)

    async def close(self) -> None:
        if self.session is not None:
            self._sent, self._received = self.packets_sent, self.packets_received
            session, self.session = self.session, None
            await session.close()
        await self.allocator.release(self.port)


async def pace(tick: Callable[[], bool]) -> None:
    """Call ``tick`` every 20 ms on an absolute schedule until it returns False."""
    loop = asyncio.get_running_loop()
    interval = FRAME_MS / 1000
    due = loop.time()
    while tick():
        due += interval
        delay = due - loop.time()
        if delay < -0.2:  # the process stalled: resume the schedule from now
            due = loop.time()
            delay = 0
        await asyncio.sleep(max(0.0, delay))
