"""The webhook sender's HTTP client: POST a small body, read the status and the answer's start
(decision 0218).

HTTP/1.1 only, over keep-alive connections pooled per origin; the answer is parsed by httptools
(llhttp, the parser uvicorn uses). Every destination passes the SSRF guard (decision 0205): a
literal address is checked, a host name is resolved by the guarded resolver and the connection
goes to an address that passed. What it does not do, on purpose: follow redirects, use proxies,
keep cookies, ask for compression, pipeline requests.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast
from urllib.parse import quote, urlsplit

import httptools

from switchboard.kit.destinations import (
    GuardedResolver,
    IPNetwork,
    RefusedDestination,
    check_literal_host,
    check_url_shape,
    literal_address,
)

KEEPALIVE = 15.0  # an idle connection is closed after this long (aiohttp's default)
DNS_TTL = 10.0  # a host name's checked addresses are reused this long
DRAIN_MAX = 64 * 1024  # past this much body the connection is closed rather than read on
_SAFE_PATH = "/:@!$&'()*+,;=-._~%"
_SAFE_QUERY = _SAFE_PATH + "?"


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    head: bytes  # the first bytes of the body, at most the client's ``snippet``


@dataclass(frozen=True, slots=True)
class _Target:
    """What a URL means on the wire: where to connect and the request's first lines."""

    origin: tuple[str, str, int]  # scheme, host, port
    host: str  # as resolved and as the certificate must name it
    port: int
    tls: bool
    start: bytes  # request line, Host and the client's fixed headers


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: one request at a time; the answer completes ``waiter``."""

    def __init__(self, snippet: int) -> None:
        self.snippet = snippet
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[Answer] | None = None
        self.body = bytearray()
        self.seen = 0  # bytes of body read
        self.status = 0
        self.keep = False  # the answer allows the connection's reuse
        self.headed = False  # the answer's headers are complete
        self.heard = False  # a byte of the answer arrived
        self.reusable = False
        self.closed = False
        self.idle_since = 0.0

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's, under ``switchboard serve``, is not asyncio's class).
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self.waiter is None or self.waiter.done():
            self.close()  # nothing was asked: a server talking out of turn
            return
        self.heard = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._answer(reusable=False)
        except httptools.HttpParserError as exc:
            self._fail(ValueError(f"malformed answer: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.headed:  # an answer whose body runs to the end of the connection
            self._answer(reusable=False)
        else:
            self._fail(ConnectionResetError("the connection closed before an answer"))

    # httptools callbacks

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep = self.parser.should_keep_alive()
        self.headed = True

    def on_body(self, body: bytes) -> None:
        room = self.snippet - len(self.body)
        if room > 0:
            self.body += body[:room]
        self.seen += len(body)
        if self.seen > DRAIN_MAX:
            self._answer(reusable=False)
            self.close()

    def on_message_complete(self) -> None:
        if 100 <= self.status < 200 and self.status != 101:
            self.headed, self.status = False, 0  # informational: the answer follows
            return
        self._answer(reusable=self.keep)

    # the request

    def send(self, data: bytes) -> asyncio.Future[Answer]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.body.clear()
        self.seen, self.status, self.keep = 0, 0, False
        self.headed, self.heard, self.reusable = False, False, False
        self.transport.write(data)
        return self.waiter

    def expire(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(TimeoutError())

    def partial(self) -> Answer | None:
        """The status and what arrived of the body, when the headers did (at a timeout)."""
        return Answer(self.status, bytes(self.body)) if self.headed else None

    def _answer(self, *, reusable: bool) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.reusable = reusable and not self.closed
            self.waiter.set_result(Answer(self.status, bytes(self.body)))

    def _fail(self, exc: Exception) -> None:
        self.close()
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    def close(self) -> None:
        self.closed = True
        self.reusable = False
        if self.transport is not None:
            self.transport.close()


class PostClient:
    """POSTs through the guard over pooled HTTP/1.1 connections.

    ``post`` raises RefusedDestination for a destination the guard refuses, TimeoutError past
    ``timeout`` (connecting past ``connect_timeout``) with no answer's headers, OSError for the
    connection's failures (ssl.SSLError among them) and ValueError for a malformed answer or a
    URL that cannot be written on the wire."""

    def __init__(
        self,
        *,
        allow: Sequence[IPNetwork],
        timeout: float,
        connect_timeout: float,
        limit: int,
        user_agent: str,
        snippet: int,
        keepalive: float = KEEPALIVE,
    ) -> None:
        self.allow = tuple(allow)
        self.keepalive = keepalive
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.limit = limit  # idle connections kept, over every origin
        self.snippet = snippet
        self._fixed = f"User-Agent: {user_agent}\r\nAccept: */*\r\n"
        self._resolver = GuardedResolver(self.allow)
        self._tls: ssl.SSLContext | None = None
        self._targets: dict[str, _Target] = {}
        self._addresses: dict[tuple[str, int], tuple[float, list[str]]] = {}
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._idle_count = 0
        self._sweeper: asyncio.TimerHandle | None = None  # while connections are idle

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()
        self._idle_count = 0
        await self._resolver.close()

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> Answer:
        target = self._target(url)
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        data = b"".join(
            (target.start, f"Content-Length: {len(body)}\r\n{lines}\r\n".encode("ascii"), body)
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        connection = self._reuse(target)
        if connection is not None:
            try:
                return await self._exchange(target, connection, data, deadline)
            except ConnectionResetError:
                if connection.heard:
                    raise
                # Closed by the server while idle (the race every keep-alive client meets):
                # once more on a new connection. The receiver may see the delivery twice,
                # which at-least-once delivery allows.
        async with asyncio.timeout_at(deadline):
            connection = await self._connect(target)
        return await self._exchange(target, connection, data, deadline)

    async def _exchange(
        self, target: _Target, connection: _Connection, data: bytes, deadline: float
    ) -> Answer:
        # A timer on the answer's future rather than ``asyncio.timeout``, which costs more
        # than the rest of an exchange's Python on the event loop.
        waiter = connection.send(data)
        timer = asyncio.get_running_loop().call_at(deadline, connection.expire)
        try:
            answer = await waiter
        except TimeoutError:
            # The answer's headers came but not the end of its body: the status stands.
            partial = connection.partial()
            connection.close()
            if partial is None:
                raise
            return partial
        except BaseException:
            connection.close()  # cancelled or failed: the connection's state is unknown
            raise
        finally:
            timer.cancel()
        if connection.reusable:
            self._keep(target, connection)
        else:
            connection.close()
        return answer

    # Where to.

    def _target(self, url: str) -> _Target:
        target = self._targets.get(url)
        if target is None:
            target = self._targets[url] = self._parse(url)
            if len(self._targets) > 10_000:
                self._targets.clear()
        return target

    def _parse(self, url: str) -> _Target:
        check_literal_host(url, self.allow)
        host, port = check_url_shape(url)
        parts = urlsplit(url)
        try:
            wire_host = host if host.isascii() else host.encode("idna").decode("ascii")
        except UnicodeError:
            raise ValueError("the URL's host name cannot be encoded") from None
        tls = parts.scheme == "https"
        shown = f"[{wire_host}]" if ":" in wire_host else wire_host
        if port != (443 if tls else 80):
            shown = f"{shown}:{port}"
        path = quote(parts.path or "/", safe=_SAFE_PATH)
        if parts.query:
            path = f"{path}?{quote(parts.query, safe=_SAFE_QUERY)}"
        start = f"POST {path} HTTP/1.1\r\nHost: {shown}\r\n{self._fixed}".encode("ascii")
        return _Target((parts.scheme, wire_host, port), wire_host, port, tls, start)

    async def _resolve(self, target: _Target) -> list[str]:
        key = (target.host, target.port)
        cached = self._addresses.get(key)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        if literal_address(target.host) is not None:
            addresses = [target.host]  # checked with the URL
        else:
            results = await self._resolver.resolve(
                target.host, target.port, family=socket.AF_UNSPEC
            )
            addresses = [result["host"] for result in results]
        if len(self._addresses) > 10_000:
            self._addresses.clear()
        self._addresses[key] = (now + DNS_TTL, addresses)
        return addresses

    # Connections.

    async def _connect(self, target: _Target) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = self._tls_context() if target.tls else None
        failure: OSError | None = None
        async with asyncio.timeout(self.connect_timeout):
            for address in await self._resolve(target):
                try:
                    _, connection = await loop.create_connection(
                        lambda: _Connection(self.snippet),
                        address,
                        target.port,
                        ssl=tls,
                        server_hostname=target.host if tls is not None else None,
                    )
                except OSError as exc:
                    failure = exc
                    continue
                return connection
        raise failure or RefusedDestination(f"{target.host} does not resolve")

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def _reuse(self, target: _Target) -> _Connection | None:
        now = time.monotonic()
        connections = self._idle.get(target.origin)
        while connections:
            connection = connections.pop()
            self._idle_count -= 1
            if not connection.closed and now - connection.idle_since < self.keepalive:
                return connection
            connection.close()
        return None

    def _keep(self, target: _Target, connection: _Connection) -> None:
        if self._idle_count >= self.limit:
            self._sweep(time.monotonic(), make_room=True)
        connection.idle_since = time.monotonic()
        self._idle.setdefault(target.origin, []).append(connection)
        self._idle_count += 1
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().call_later(self.keepalive, self._swept)

    def _swept(self) -> None:
        """The idle connections' timer: close those idle too long, again while any is left."""
        self._sweeper = None
        now = time.monotonic()
        self._sweep(now)
        if self._idle_count:
            oldest = min(c.idle_since for connections in self._idle.values() for c in connections)
            self._sweeper = asyncio.get_running_loop().call_later(
                oldest + self.keepalive - now, self._swept
            )

    def _sweep(self, now: float, *, make_room: bool = False) -> None:
        """Close idle connections past ``keepalive`` (or closed by their server); with
        ``make_room``, also the oldest of the largest pool when every slot is taken."""
        for origin, connections in list(self._idle.items()):
            kept = []
            for connection in connections:
                if not connection.closed and now - connection.idle_since < self.keepalive:
                    kept.append(connection)
                else:
                    connection.close()
                    self._idle_count -= 1
            if kept:
                self._idle[origin] = kept
            else:
                del self._idle[origin]
        if make_room and self._idle_count >= self.limit and self._idle:
            largest = max(self._idle.values(), key=len)
            largest.pop(0).close()
            self._idle_count -= 1
