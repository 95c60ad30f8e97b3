"""The guard's TLS listeners (spec 8.2.1: TLS 5349 and 443).

For every accepted TCP connection, in the order of spec 8.2.5: the operator ACL drops it, then
the TLS auto-blacklist refuses an auto-blocked IP, then the per-IP quota of concurrent
connections (each carries at most one TURN allocation) refuses one too many. Only then is the
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
import struct
from collections import Counter

from switchboard.kit.clock import Clock
from switchboard.relay.acl import Acl
from switchboard.relay.addresses import IPAddress, is_exempt, parse_address
from switchboard.relay.certificates import CertificateStore
from switchboard.relay.stats import RelayStats
from switchboard.relay.tracker import FailureTracker

log = logging.getLogger("switchboard.relay.guard")

PROXY_V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
CHUNK = 65536


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
    ) -> None:
        self.clock = clock
        self.certificates = certificates
        self.tracker = tracker
        self.stats = stats
        self.upstream = upstream
        self.handshake_timeout = handshake_timeout
        self.per_ip_connections = per_ip_connections
        self.acl = Acl()
        self.servers: list[asyncio.Server] = []
        self._open: Counter[IPAddress] = Counter()
        self._tasks: set[asyncio.Task[None]] = set()

    async def listen(self, host: str, port: int) -> int:
        """Start one TLS listener; returns the bound port (port 0 picks a free one)."""
        server = await asyncio.start_server(self._accept, host, port, reuse_address=True)
        self.servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        for server in self.servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        for server in self.servers:
            await server.wait_closed()
        self.servers.clear()

    def currently_blocked(self) -> int:
        return self.tracker.blocked_count(self.clock.now())

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            writer.transport.abort()
        finally:
            self._tasks.discard(task)

    def _refuse(self, address: IPAddress) -> bool:
        """The rules in precedence order; True when the connection is dropped."""
        if self.acl.blocks(address):
            self.stats.acl_blocked["tls"] += 1
            return True
        if self.tracker.is_blocked(address, self.clock.now()):
            self.stats.blocked_rejects += 1
            return True
        if not is_exempt(address) and self._open[address] >= self.per_ip_connections:
            self.stats.quota_rejects["tls"] += 1
            return True
        return False

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        local = writer.get_extra_info("sockname")
        address = parse_address(peer[0])
        if self._refuse(address):
            writer.transport.abort()
            return
        self._open[address] += 1
        try:
            if not await self._handshake(address, writer):
                return
            self.stats.tls_accepted += 1
            await self._forward(reader, writer, (peer[0], peer[1]), (local[0], local[1]))
        finally:
            self._open[address] -= 1
            if self._open[address] <= 0:
                del self._open[address]

    async def _handshake(self, address: IPAddress, writer: asyncio.StreamWriter) -> bool:
        context = self.certificates.context
        reason = None
        if context is None:
            reason = "no_certificate"
        else:
            try:
                await asyncio.wait_for(writer.start_tls(context), self.handshake_timeout)
            except TimeoutError:
                reason = "timeout"
            except Exception as exc:
                log.debug("TLS handshake from %s failed: %s", address, exc)
                reason = "error"
        if reason is None:
            return True
        writer.transport.abort()
        self.stats.handshake_failures[reason] += 1
        if self.tracker.record_failure(address, self.clock.now()):
            self.stats.auto_blocks += 1
            log.warning("TLS auto-blacklist: %s blocked after repeated handshake failures", address)
        return False

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
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


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
