"""The bridge's SIP address: one UDP socket and one TCP listener on ``--sip``, and the routing
of what arrives there to client transactions, server INVITEs and dialogs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from aiosipua import SipMessage, SipRequest, SipResponse, TcpSipTransport

from switchboard.mediabridge.sip import messages

log = logging.getLogger("switchboard.mediabridge.sip")

T1 = 0.5
T2 = 4.0


class ResponseSink(Protocol):
    def on_response(self, response: SipResponse) -> None: ...


class RequestSink(Protocol):
    def on_request(self, request: SipRequest, addr: tuple[str, int], transport: str) -> None: ...


InviteHandler = Callable[[SipRequest, tuple[str, int], str], Awaitable[None]]
MessageHandler = Callable[[SipRequest | SipResponse, tuple[str, int]], None]


class _Udp(asyncio.DatagramProtocol):
    """One datagram, one SIP message (aiosipua 0.7.1's UDP transport asserts a transport class
    that Python 3.11's selector loop does not have, so the socket is driven here)."""

    def __init__(self, deliver: MessageHandler) -> None:
        self.deliver = deliver
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str | object, ...]) -> None:
        if not data.strip():
            return  # keep-alive
        try:
            message = SipMessage.parse(data)
        except (ValueError, IndexError):
            log.info("unparsable SIP datagram from %s", addr[0])
            return
        self.deliver(message, (str(addr[0]), int(str(addr[1]))))

    def error_received(self, exc: Exception) -> None:
        log.debug("UDP error: %s", exc)


class SipEndpoint:
    """``t1`` is RFC 3261's round-trip estimate (500 ms); timers B and F are ``64 * t1``."""

    def __init__(self, host: str, port: int, *, advertise: str = "", t1: float = T1) -> None:
        self.host = host
        self.port = port
        self.advertise = advertise or host
        self.t1 = t1
        self.udp = _Udp(self._udp_message)
        self.tcp: TcpSipTransport | None = None
        self._clients: dict[tuple[str, str], ResponseSink] = {}
        self._dialogs: dict[str, RequestSink] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.on_invite: InviteHandler | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.create_datagram_endpoint(lambda: self.udp, local_addr=(self.host, self.port))
        assert self.udp.transport is not None
        self.port = int(self.udp.transport.get_extra_info("sockname")[1])
        self.tcp = TcpSipTransport(local_addr=(self.host, self.port), on_message=self._tcp_message)
        await self.tcp.start()

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.udp.transport is not None:
            self.udp.transport.close()
        if self.tcp is not None:
            await self.tcp.stop()

    @property
    def local(self) -> tuple[str, int]:
        return (self.advertise, self.port)

    def contact(self, user: str = "bridge") -> str:
        return f"<sip:{user}@{messages.host_port(*self.local)}>"

    async def connect(self, addr: tuple[str, int], transport: str) -> None:
        """Open the TCP connection to a trunk once; UDP needs none."""
        tcp = self.tcp
        if transport == "tcp" and tcp is not None and addr not in tcp._connections:
            await tcp.connect(addr)

    def send(
        self, message: SipRequest | SipResponse, addr: tuple[str, int], transport: str
    ) -> None:
        try:
            if transport == "tcp" and self.tcp is not None:
                self.tcp.send(message, addr)
            elif self.udp.transport is not None:
                self.udp.transport.sendto(bytes(message), addr)
        except (OSError, RuntimeError) as exc:
            log.warning("cannot send SIP %s to %s: %s", _what(message), addr, exc)

    # Routing ---------------------------------------------------------------------------

    def add_client(self, branch: str, method: str, sink: ResponseSink) -> None:
        """A CANCEL shares its INVITE's branch: transactions are known by branch and method."""
        self._clients[(branch, method)] = sink

    def drop_client(self, branch: str, method: str) -> None:
        self._clients.pop((branch, method), None)

    def add_dialog(self, call_id: str, sink: RequestSink) -> None:
        self._dialogs[call_id] = sink

    def drop_dialog(self, call_id: str) -> None:
        self._dialogs.pop(call_id, None)

    def _udp_message(self, message: SipRequest | SipResponse, addr: tuple[str, int]) -> None:
        self._route(message, addr, "udp")

    def _tcp_message(self, message: SipRequest | SipResponse, addr: tuple[str, int]) -> None:
        self._route(message, addr, "tcp")

    def _route(self, message: SipRequest | SipResponse, addr: tuple[str, int], kind: str) -> None:
        if isinstance(message, SipResponse):
            key = (messages.top_branch(message), messages.cseq_of(message)[1])
            sink = self._clients.get(key)
            if sink is not None:
                sink.on_response(message)
            return
        dialog = self._dialogs.get(message.call_id or "")
        if dialog is not None:
            dialog.on_request(message, addr, kind)
        elif message.method == "INVITE" and self.on_invite is not None:
            task = asyncio.ensure_future(self.on_invite(message, addr, kind))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            task.add_done_callback(_log_failure)
        elif message.method == "OPTIONS":
            self.send(messages.response(message, 200), addr, kind)
        elif message.method != "ACK":
            self.send(messages.response(message, 481), addr, kind)


def _what(message: SipRequest | SipResponse) -> str:
    if isinstance(message, SipRequest):
        return message.method
    return str(message.status_code)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("inbound call failed", exc_info=task.exception())
