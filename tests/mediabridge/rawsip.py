"""A far end that writes SIP and RTP byte by byte over UDP: what a misbehaving carrier or an
attacker sends to the bridge's ports, and what comes back."""

from __future__ import annotations

import asyncio
import re
import secrets
import struct
from dataclasses import dataclass, field
from typing import Any

from aiosipua import SipMessage, SipRequest, SipResponse

LOUD_PCMU = b"\x10" * 160  # 20 ms of a loud μ-law signal


def sdp(host: str = "127.0.0.1", port: int = 40000, formats: str = "0 8 101") -> str:
    return (
        f"v=0\r\no=caller 1 1 IN IP4 {host}\r\ns=-\r\nc=IN IP4 {host}\r\nt=0 0\r\n"
        f"m=audio {port} RTP/AVP {formats}\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\n"
        "a=rtpmap:101 telephone-event/8000\r\n"
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

    async def final(self, method: str = "INVITE", within: float = 20.0) -> SipResponse:
        """The first final response to ``method``, past provisional ones and other traffic."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            message = await self.reply(max(0.0, deadline - loop.time()))
            cseq = message.headers.get_first("cseq") or ""
            if (
                isinstance(message, SipResponse)
                and message.status_code >= 200
                and cseq.endswith(method)
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

    async def answered(self, media_port: int) -> SipResponse:
        """INVITE with an offer for ``media_port``, the bridge's 200, and the ACK."""
        self.send(self.wire("INVITE", sdp(port=media_port)))
        ok = await self.final()
        assert ok.status_code == 200, ok.status_code
        to = ok.headers.get_first("to") or ""
        self.to_tag = to.split("tag=", 1)[1]
        self.send(self.wire("ACK"))
        return ok

    def in_dialog(self, method: str, body: str = "", **extra: str) -> bytes:
        self.cseq += 1
        return self.wire(method, body, headers=extra)


def media_port(answer: SipResponse) -> int:
    """The port of the bridge's SDP answer."""
    found = re.search(r"m=audio (\d+)", answer.body.decode())
    assert found is not None
    return int(found.group(1))
