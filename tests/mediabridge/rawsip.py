"""A far end that writes SIP and RTP byte by byte over UDP: what a misbehaving carrier or an
attacker sends to the bridge's ports, and what comes back."""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from aiosipua import SipMessage, SipRequest, SipResponse

LOUD_PCMU = b"\x10" * 160  # 20 ms of a loud μ-law signal


def sdp(
    host: str = "127.0.0.1", port: int = 40000, formats: str = "0 8 101", direction: str = ""
) -> str:
    """An offer; ``direction`` adds its attribute (none: sendrecv)."""
    return (
        f"v=0\r\no=caller 1 1 IN IP4 {host}\r\ns=-\r\nc=IN IP4 {host}\r\nt=0 0\r\n"
        f"m=audio {port} RTP/AVP {formats}\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\n"
        "a=rtpmap:101 telephone-event/8000\r\n" + (f"a={direction}\r\n" if direction else "")
    )


def rtp(seq: int, payload: bytes = LOUD_PCMU, ssrc: int = 0x5EED) -> bytes:
    return struct.pack("!BBHII", 0x80, 0, seq & 0xFFFF, (seq * 160) & 0xFFFFFFFF, ssrc) + payload


class _Socket(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.count = 0

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self.count += 1
        self.queue.put_nowait(data)


@dataclass
class Udp:
    """One UDP socket: ``send`` to a port of the bridge, ``next`` datagram back."""

    transport: asyncio.DatagramTransport
    protocol: _Socket

    @classmethod
    async def open(cls, host: str = "127.0.0.1") -> Udp:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.create_datagram_endpoint(_Socket, local_addr=(host, 0))
        return cls(transport, protocol)

    @property
    def port(self) -> int:
        return int(self.transport.get_extra_info("sockname")[1])

    @property
    def received(self) -> int:
        return self.protocol.count

    def send(self, data: bytes, port: int, host: str = "127.0.0.1") -> None:
        self.transport.sendto(data, (host, port))

    async def next(self, within: float = 10.0) -> bytes:
        return await asyncio.wait_for(self.protocol.queue.get(), within)

    def close(self) -> None:
        self.transport.close()


@dataclass
class Caller:
    """A caller's SIP over ``udp``: requests with every header a test may drop or bend."""

    udp: Udp
    bridge_port: int
    did: str = "+4930100"
    call_id: str = field(default_factory=lambda: secrets.token_hex(8))
    tag: str = field(default_factory=lambda: secrets.token_hex(4))
    to_tag: str = ""
    cseq: int = 1

    def headers(self, method: str, branch: str = "") -> dict[str, str]:
        port = self.udp.port
        to = f"<sip:{self.did}@127.0.0.1>" + (f";tag={self.to_tag}" if self.to_tag else "")
        branch = branch or "z9hG4bK" + secrets.token_hex(6)
        return {
            "Via": f"SIP/2.0/UDP 127.0.0.1:{port};branch={branch}",
            "From": f"<sip:+14155550199@127.0.0.1:{port}>;tag={self.tag}",
            "To": to,
            "Call-ID": self.call_id,
            "CSeq": f"{self.cseq} {method}",
            "Contact": f"<sip:+14155550199@127.0.0.1:{port}>",
            "Max-Forwards": "70",
        }

    def wire(
        self, method: str, body: str | bytes = "", *, headers: dict[str, str] | None = None,
        line: str = "", length: str | None = None,
    ) -> bytes:  # fmt: skip
        """The request as bytes: ``headers`` replaces the defaults (a value of ``""`` drops the
        header), ``line`` the request line, ``length`` the Content-Length."""
        data = body.encode() if isinstance(body, str) else body
        values = {**self.headers(method), **(headers or {})}
        if data:
            values.setdefault("Content-Type", "application/sdp")
        values["Content-Length"] = length if length is not None else str(len(data))
        start = line or f"{method} sip:{self.did}@127.0.0.1 SIP/2.0"
        text = "".join(f"{name}: {value}\r\n" for name, value in values.items() if value)
        return f"{start}\r\n{text}\r\n".encode() + data

    def send(self, data: bytes) -> None:
        self.udp.send(data, self.bridge_port)

    async def reply(self, within: float = 10.0) -> SipMessage:
        return SipMessage.parse(await self.udp.next(within))

    async def final(
        self, method: str = "INVITE", within: float = 20.0, cseq: int | None = None
    ) -> SipResponse:
        """The first final response to ``method`` (with the CSeq number ``cseq``, when given),
        past provisional ones and other traffic."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            message = await self.reply(max(0.0, deadline - loop.time()))
            value = message.headers.get_first("cseq") or ""
            if (
                isinstance(message, SipResponse)
                and message.status_code >= 200
                and value.endswith(method)
                and (cseq is None or value == f"{cseq} {method}")
            ):
                return message

    async def request(self, method: str, within: float = 20.0) -> SipRequest:
        """The next request of ``method`` the bridge sends this caller."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            message = await self.reply(max(0.0, deadline - loop.time()))
            if isinstance(message, SipRequest) and message.method == method:
                return message

    async def answered(
        self, media_port: int, headers: dict[str, str] | None = None, ack: bool = True
    ) -> SipResponse:
        """INVITE with an offer for ``media_port``, the bridge's 200, and the ACK."""
        self.send(self.wire("INVITE", sdp(port=media_port), headers=headers))
        ok = await self.final()
        assert ok.status_code == 200, ok.status_code
        to = ok.headers.get_first("to") or ""
        self.to_tag = to.split("tag=", 1)[1]
        if ack:
            self.send(self.wire("ACK"))
        return ok

    def in_dialog(
        self, method: str, body: str = "", headers: dict[str, str] | None = None
    ) -> bytes:
        self.cseq += 1
        return self.wire(method, body, headers=headers)

    def ack(self, cseq: int) -> bytes:
        """The ACK of the 2xx to the INVITE whose CSeq number is ``cseq``."""
        return self.wire("ACK", headers={"CSeq": f"{cseq} ACK"})

    async def reinvite(
        self, body: str = "", headers: dict[str, str] | None = None, ack: bool = True
    ) -> SipResponse:
        """A re-INVITE in the dialog and its final answer, acknowledged unless ``ack`` is False
        (the ACK of a refusal shares the re-INVITE's Via, RFC 3261 §17.1.1.3)."""
        self.cseq += 1
        via = self.headers("INVITE")["Via"]
        self.send(self.wire("INVITE", body, headers={"Via": via, **(headers or {})}))
        answer = await self.final(cseq=self.cseq)
        if ack:
            same = {} if answer.status_code < 300 else {"Via": via}
            self.send(self.wire("ACK", headers=same))
        return answer

    async def hang_up(self) -> None:
        """BYE, and the bridge's 200."""
        self.send(self.in_dialog("BYE"))
        assert (await self.final("BYE")).status_code == 200

    def respond(self, request: SipRequest, status: int = 200) -> None:
        """Answer a request of the bridge's (its BYE)."""
        answer = SipResponse(status_code=status, reason_phrase="OK" if status == 200 else "")
        for name in ("via", "from", "to", "call-id", "cseq"):
            for value in request.headers.get(name):
                answer.headers.append(name, value)
        self.send(bytes(answer))


def media_port(answer: SipResponse) -> int:
    """The port of the bridge's SDP answer."""
    found = re.search(r"m=audio (\d+)", answer.body.decode())
    assert found is not None
    return int(found.group(1))


@contextlib.asynccontextmanager
async def speaking(udp: Udp, to_port: int) -> AsyncIterator[None]:
    """``udp`` sends a 20 ms packet of sound every 20 ms, the way a phone does."""

    async def speak() -> None:
        seq = 0
        while True:
            udp.send(rtp(seq), to_port)
            seq += 1
            await asyncio.sleep(0.02)

    task = asyncio.ensure_future(speak())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def until(condition: Callable[[], bool], within: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        assert loop.time() < deadline, "not reached in time"
        await asyncio.sleep(0.01)


async def hears(udp: Udp, packets: int, within: float = 20.0) -> None:
    """``udp`` receives ``packets`` more datagrams (the bridge's RTP reaches the phone)."""
    heard = udp.received
    await until(lambda: udp.received >= heard + packets, within)
