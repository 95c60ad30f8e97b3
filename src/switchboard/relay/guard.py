"""The guard's TCP listeners: TLS 5349 and 443 (spec 8.2.1), and plain TCP on the TURN port.

coturn 4.6 stops listening for plain TCP on its TURN port once its PROXY-protocol port is on, so
the guard also accepts plain TCP there and forwards it the same way (the packet filter has
already applied the ACL and the quota to it).

For every accepted TCP connection, in the order of spec 8.2.5: the operator ACL drops it, then
the TLS auto-blacklist refuses an auto-blocked IP, then the per-IP quota of concurrent
connections (each carries at most one TURN allocation) refuses one too many. An IPv6 client
counts as its /64 for both (decision 0705). Last, the cap on the connections the guard holds
at once, every client together, refuses a public address's connection past it, a plain one on
the TURN port too (decision 0708). Only then is the
TLS handshake run; a failure (no certificate loaded, timeout, any other handshake exception)
counts toward the auto-blacklist. A completed handshake is forwarded to coturn's PROXY-protocol
port with a PROXY v2 header naming the client, so coturn applies its own limits to the real
address.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import ssl
import struct
from collections import Counter
from collections.abc import Coroutine

from switchboard.kit.clock import Clock
from switchboard.relay.acl import Acl
from switchboard.relay.addresses import IPAddress, IPNetwork, client_of, is_exempt, parse_address
from switchboard.relay.certificates import CertificateStore
from switchboard.relay.stats import RelayStats
from switchboard.relay.tracker import FailureTracker

log = logging.getLogger("switchboard.relay.guard")

PROXY_V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
CHUNK = 65536
CAP_WARNING_EVERY = 60.0  # seconds between the warnings that the cap refuses connections


def proxy_v2_header(source: tuple[str, int], destination: tuple[str, int]) -> bytes:
    """A PROXY protocol v2 header for a TCP connection (haproxy's proxy-protocol.txt)."""
    src, dst = parse_address(source[0]), parse_address(destination[0])
    if src.version != dst.version:  # an IPv4 client on a dual-stack socket
        dst = ipaddress.IPv6Address(0) if src.version == 6 else ipaddress.IPv4Address(0)
    family = 0x11 if src.version == 4 else 0x21
    body = src.packed + dst.packed + struct.pack("!HH", source[1], destination[1])
    return PROXY_V2_SIGNATURE + struct.pack("!BBH", 0x21, family, len(body)) + body


class Guard:
    def __init__(
        self,
        *,
        clock: Clock,
        certificates: CertificateStore,
        tracker: FailureTracker,
        stats: RelayStats,
        upstream: tuple[str, int],
        handshake_timeout: float,
        per_ip_connections: int,
        max_connections: int,
    ) -> None:
        self.clock = clock
        self.certificates = certificates
        self.tracker = tracker
        self.stats = stats
        self.upstream = upstream
        self.handshake_timeout = handshake_timeout
        self.per_ip_connections = per_ip_connections
        self.max_connections = max_connections
        self.acl = Acl()
        self.plain_acl_drops = 0
        self._listeners: list[socket.socket] = []
        self._open: Counter[IPNetwork] = Counter()  # per client (an IPv6 client is its /64)
        self._held = 0  # every connection past the rules, TLS and plain, exempt ones too
        self._warned_at: float | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def listen(self, host: str, port: int, *, tls: bool = True) -> int:
        """Start one listener; returns the bound port (port 0 picks a free one). A plain one
        (TCP on the TURN port) only forwards: the packet filter has applied the rules.

        Connections are accepted as bare sockets: nothing reads from a socket before the rules
        have run and the TLS layer owns it, so no ClientHello byte is ever buffered elsewhere.
        """
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        listener = socket.socket(family, kind, proto)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        listener.bind(address)
        listener.listen(1024)
        listener.setblocking(False)
        self._listeners.append(listener)
        asyncio.get_running_loop().add_reader(listener.fileno(), self._accept, listener, tls)
        return int(listener.getsockname()[1])

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        for listener in self._listeners:
            loop.remove_reader(listener.fileno())
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()

    def open_connections(self) -> int:
        """TLS connections past the rules: in their handshake or forwarded to coturn."""
        return sum(self._open.values())

    def held_connections(self) -> int:
        """TLS and plain TCP connections past the rules (the cap counts these)."""
        return self._held

    def _at_cap(self, address: IPAddress, path: str) -> bool:
        """Whether the cap refuses a connection from ``address``: a public one, while the
        guard holds ``max_connections`` already (private addresses are always allowed)."""
        if is_exempt(address) or self._held < self.max_connections:
            return False
        self.stats.cap_rejects[path] += 1
        now = self.clock.timestamp()
        if self._warned_at is None or now - self._warned_at >= CAP_WARNING_EVERY:
            self._warned_at = now
            log.warning(
                "the relay holds %d connections, its cap (SWITCHBOARD_RELAY_MAX_CONNECTIONS): "
                "new ones from public addresses are refused",
                self.max_connections,
            )
        return True

    def currently_blocked(self) -> int:
        return self.tracker.blocked_count(self.clock.now())

    def _spawn(self, work: Coroutine[None, None, None]) -> None:
        task = asyncio.create_task(_quietly(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _accept(self, listener: socket.socket, tls: bool) -> None:
        """Called when the listener is readable: take every pending connection."""
        for _ in range(64):
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. EMFILE: keep serving the connections already open
                log.warning("accept failed: %s", exc)
                return
            conn.setblocking(False)
            self._spawn(self._serve(conn) if tls else self._serve_plain(conn))

    async def _serve_plain(self, conn: socket.socket) -> None:
        with conn:
            peer, local = conn.getpeername(), conn.getsockname()
            address = parse_address(peer[0])
            if self.acl.blocks(address):  # only when running without the filter
                self.plain_acl_drops += 1
                _reset(conn)
                return
            if self._at_cap(address, "tcp"):
                _reset(conn)
                return
            self._held += 1
            try:
                reader, writer = await _streams(conn.dup(), None, 0)
                await self._forward(reader, writer, peer, local)
            finally:
                self._held -= 1

    def _refuse(self, address: IPAddress) -> bool:
        """The rules in precedence order; True when the connection is dropped."""
        if self.acl.blocks(address):
            self.stats.acl_blocked["tls"] += 1
            return True
        if self.tracker.is_blocked(address, self.clock.now()):
            self.stats.blocked_rejects += 1
            return True
        if not is_exempt(address) and self._open[client_of(address)] >= self.per_ip_connections:
            self.stats.quota_rejects["tls"] += 1
            return True
        return self._at_cap(address, "tls")

    async def _serve(self, conn: socket.socket) -> None:
        with conn:
            peer, local = conn.getpeername(), conn.getsockname()
            address = parse_address(peer[0])
            if self._refuse(address):
                _reset(conn)
                return
            client = client_of(address)
            self._open[client] += 1
            self._held += 1
            try:
                streams = await self._handshake(address, conn)
                if streams is None:
                    return
                self.stats.tls_accepted += 1
                await self._forward(*streams, peer, local)
            finally:
                self._held -= 1
                self._open[client] -= 1
                if self._open[client] <= 0:
                    del self._open[client]

    async def _handshake(
        self, address: IPAddress, conn: socket.socket
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        context = self.certificates.context
        reason = "no_certificate"
        if context is not None:
            try:
                own = conn.dup()  # the TLS transport's socket
            except OSError as exc:  # out of descriptors: the relay's failure, not the client's
                log.warning("TLS connection from %s dropped: %s", address, exc)
                _reset(conn)
                return None
            try:
                return await asyncio.wait_for(
                    _streams(own, context, self.handshake_timeout + 5), self.handshake_timeout
                )
            except TimeoutError:
                reason = "timeout"
            except Exception as exc:  # spec 8.2.4 counts any other handshake exception
                log.debug("TLS handshake from %s failed: %s", address, exc)
                reason = "error"
            own.close()
        _reset(conn)
        self.stats.handshake_failures[reason] += 1
        if self.tracker.record_failure(address, self.clock.now()):
            self.stats.auto_blocks += 1
            log.warning(
                "TLS auto-blacklist: %s blocked after repeated handshake failures",
                client_of(address),
            )
        return None

    async def _forward(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client: tuple[str, int],
        local: tuple[str, int],
    ) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError as exc:
            log.warning("coturn unreachable at %s:%s: %s", *self.upstream, exc)
            writer.transport.abort()
            return
        sock = up_writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        up_writer.write(proxy_v2_header(client, local))
        # Each direction closes its sink when its source ends, so either side ending ends both.
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _streams(
    own: socket.socket, context: ssl.SSLContext | None, handshake_timeout: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Streams over an accepted socket (``own``: a duplicate the transport takes over), after
    the server side of the TLS handshake if any."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=CHUNK)
    protocol = asyncio.StreamReaderProtocol(reader)
    transport, _ = await loop.connect_accepted_socket(
        lambda: protocol, own, ssl=context,
        ssl_handshake_timeout=handshake_timeout if context is not None else None,
    )  # fmt: skip
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


async def _quietly(work: Coroutine[None, None, None]) -> None:
    """A client that vanishes mid-way (reset, unreachable) ends its own connection only."""
    try:
        await work
    except OSError as exc:
        log.debug("connection ended: %s", exc)


def _reset(conn: socket.socket) -> None:
    """Drop a connection with a reset: no FIN handshake, nothing kept in TIME_WAIT."""
    with contextlib.suppress(OSError):
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(CHUNK):
            sink.write(data)
            await sink.drain()
    except (OSError, ConnectionError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if sink.can_write_eof():
                sink.write_eof()
        sink.close()
