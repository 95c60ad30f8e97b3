"""SIP over TCP on ``--sip``: aiosipua's framing, with the connections anyone may hold bounded.

An idle connection costs a file descriptor for as long as its peer keeps it, so the listener
takes at most ``MAX_CONNECTIONS`` connections, ``MAX_PER_SOURCE`` from one address, and closes
one that has not carried a whole SIP message within ``64·T1`` of opening (a trunk's connection
that has carried one stays open between calls). A connection from an address ``admits``
refuses (``--sip-allow``, ``sources.py``) is closed as it opens. Each message goes to
``deliver`` unparsed, the way a UDP datagram does (decision 0325).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable

from aiosipua import TcpSipTransport

log = logging.getLogger("switchboard.mediabridge.sip")

MAX_CONNECTIONS = 512
MAX_PER_SOURCE = 32

Deliver = Callable[[bytes, tuple[str, int]], None]


class BoundedTcp(TcpSipTransport):
    def __init__(
        self,
        local_addr: tuple[str, int],
        deliver: Deliver,
        first_message_sec: float,
        admits: Callable[[str], bool] = lambda _host: True,
    ) -> None:
        super().__init__(local_addr=local_addr)
        self.deliver = deliver
        self.admits = admits
        self.first_message_sec = first_message_sec
        self.accepted: Counter[str] = Counter()
        self._deadlines: dict[tuple[str, int], asyncio.Timeout] = {}

    async def _handle_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername")
        addr = (str(peer[0]), int(peer[1])) if peer else ("0.0.0.0", 0)  # noqa: S104
        host = addr[0]
        if not self.admits(host):
            log.debug("TCP connection from %s refused: not an allowed source", host)
            writer.close()
            return
        if sum(self.accepted.values()) >= MAX_CONNECTIONS or self.accepted[host] >= MAX_PER_SOURCE:
            log.debug("TCP connection from %s refused: too many open connections", host)
            writer.close()
            return
        self.accepted[host] += 1
        try:
            async with asyncio.timeout(self.first_message_sec) as deadline:
                self._deadlines[addr] = deadline
                await super()._handle_connection(reader, writer)
        except TimeoutError:
            log.info("TCP connection from %s closed: no SIP message within %.0f s", host,
                     self.first_message_sec)  # fmt: skip
        finally:
            self._deadlines.pop(addr, None)
            self.accepted[host] -= 1
            if self.accepted[host] <= 0:
                del self.accepted[host]

    def _dispatch(self, data: bytes, addr: tuple[str, int]) -> None:
        deadline = self._deadlines.pop(addr, None)
        if deadline is not None:
            deadline.reschedule(None)
        self.deliver(data, addr)
