"""The bridge's SIP address: one UDP socket and one TCP listener on ``--sip``, and the routing
of what arrives there to client transactions, server INVITEs and dialogs, once ``checks.py``
has judged it (decision 0325)."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Protocol

from aiosipua import SipMessage, SipRequest, SipResponse

from switchboard.mediabridge.sip import checks, messages
from switchboard.mediabridge.sip.sources import Sources
from switchboard.mediabridge.sip.tcp import BoundedTcp

log = logging.getLogger("switchboard.mediabridge.sip")

T1 = 0.5
T2 = 4.0
RESOLVE_SECONDS = 2.0  # a host name's look-up, at most


class ResponseSink(Protocol):
    def on_response(self, response: SipResponse) -> None: ...


class RequestSink(Protocol):
    def on_request(self, request: SipRequest, addr: tuple[str, int], transport: str) -> None: ...


InviteHandler = Callable[[SipRequest, tuple[str, int], str], Awaitable[None]]


class _Udp(asyncio.DatagramProtocol):
    """One datagram, one SIP message (aiosipua 0.7.1's UDP transport asserts a transport class
    that Python 3.11's selector loop does not have, so the socket is driven here)."""

    def __init__(self, deliver: Callable[[bytes, tuple[str, int]], None]) -> None:
        self.deliver = deliver
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str | object, ...]) -> None:
        self.deliver(data, (str(addr[0]), int(str(addr[1]))))

    def error_received(self, exc: Exception) -> None:
        log.debug("UDP error: %s", exc)


class SipEndpoint:
    """``t1`` is RFC 3261's round-trip estimate (500 ms); timers B and F are ``64 * t1``.
    ``sources``: who may send requests (``sources.py``; None: anyone)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        advertise: str = "",
        t1: float = T1,
        sources: Sources | None = None,
    ) -> None:
        self.host = host
        self.sources = sources
        self.port = port
        self.advertise = advertise or host
        self.t1 = t1
        self.udp = _Udp(lambda data, addr: self.receive(data, addr, "udp"))
        self.tcp: BoundedTcp | None = None
        self._clients: dict[tuple[str, str], ResponseSink] = {}
        self._dialogs: dict[str, RequestSink] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.on_invite: InviteHandler | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.create_datagram_endpoint(lambda: self.udp, local_addr=(self.host, self.port))
        assert self.udp.transport is not None
        self.port = int(self.udp.transport.get_extra_info("sockname")[1])
        self.tcp = BoundedTcp(
            (self.host, self.port), lambda data, addr: self.receive(data, addr, "tcp"),
            first_message_sec=64 * self.t1, admits=self._admits,
        )  # fmt: skip
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

    async def resolve(self, addr: tuple[str, int]) -> tuple[str, int] | None:
        """``addr`` with an address for its host. A name (a trunk's, a Contact's, a proxy's) is
        looked up off the event loop, at most ``RESOLVE_SECONDS``: a look-up on the loop (a
        socket's own, as it sends) would hold up every call's media. None: it did not resolve."""
        host, port = addr
        try:
            ipaddress.ip_address(host)
            return addr
        except ValueError:
            pass
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(RESOLVE_SECONDS):
                found = await loop.getaddrinfo(host, port, family=family, type=socket.SOCK_DGRAM)
        except (OSError, TimeoutError) as exc:
            log.info("cannot resolve SIP host %s: %s", host, exc or "timed out")
            return None
        return (str(found[0][4][0]), int(found[0][4][1])) if found else None

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

    def _admits(self, host: str) -> bool:
        return self.sources is None or self.sources.admits(host)

    def receive(self, data: bytes, addr: tuple[str, int], transport: str) -> None:
        """One datagram or TCP message from anyone: a well-formed request is answered or
        routed, a response goes to its transaction, anything else is dropped (checks.py); so
        is a request from a source ``--sip-allow`` does not admit (sources.py)."""
        data = data.lstrip(b"\r\n")
        if not data:
            return  # a keep-alive (RFC 5626)
        if not data.startswith(b"SIP/") and not self._admits(addr[0]):
            log.debug("SIP request from %s dropped: not an allowed source", addr[0])
            return
        line = checks.start_line(data)
        try:
            message = SipMessage.parse(data) if line is not None else None
        except (ValueError, IndexError):
            message = None
        if line is None or message is None:
            log.debug("not a SIP message from %s: dropped", addr[0])
            return
        try:
            if isinstance(message, SipResponse):
                self._response(message)
            else:
                version = line.rsplit(b" ", 1)[-1].decode("ascii", "replace")
                self._request(message, addr, transport, version, data)
        except (ValueError, IndexError) as exc:
            log.info("SIP message from %s dropped: %s", addr[0], exc)

    def _response(self, message: SipResponse) -> None:
        key = (messages.top_branch(message), messages.cseq_of(message)[1])
        sink = self._clients.get(key)
        if sink is not None:
            sink.on_response(message)

    def _request(
        self, message: SipRequest, addr: tuple[str, int], kind: str, version: str, data: bytes
    ) -> None:
        method = message.method
        refusal = checks.request_refusal(message, version, data)
        if refusal is None:
            dialog = self._dialogs.get(message.call_id or "")
            if dialog is not None:
                dialog.on_request(message, addr, kind)
                return
            if messages.tag_of(message.headers.get_first("to")):
                refusal = checks.NO_DIALOG  # a dialog this bridge does not hold (RFC 3261 §12.2.2)
            elif method == "INVITE" and self.on_invite is not None:
                task = asyncio.ensure_future(self.on_invite(message, addr, kind))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                task.add_done_callback(_log_failure)
                return
            elif method == "OPTIONS":
                self.send(messages.response(message, 200, extra=checks.CAPABILITIES), addr, kind)
                return
            else:
                refusal = checks.method_refusal(method)
        if refusal.status and method != "ACK":
            log.debug("SIP %s from %s refused: %d %s", method, addr[0], refusal.status,
                      refusal.reason)  # fmt: skip
            answer = messages.response(
                message, refusal.status, reason=refusal.reason, extra=refusal.headers
            )
            self.send(answer, addr, kind)


def _what(message: SipRequest | SipResponse) -> str:
    if isinstance(message, SipRequest):
        return message.method
    return str(message.status_code)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("inbound call failed", exc_info=task.exception())
