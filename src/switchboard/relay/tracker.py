"""The TLS auto-blacklist (spec 8.2.4): failed handshakes per IP, and the blocks they cause.

More than ``threshold`` failures from one client within ``window`` seconds block it for
``block`` seconds; a client is an IPv4 address or an IPv6 /64 (addresses.client_of, decision
0705). Memory is bounded: at most ``capacity`` clients are tracked and at most ``capacity`` are
blocked. When the failure table is full, the client whose latest failure is oldest is evicted
(an attacker spraying fresh addresses can only push out the stalest entries, and each entry
holds at most ``threshold + 1`` timestamps). When the block table is full, the block that
expires soonest is dropped. Exempt addresses are never tracked nor blocked.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict, deque

from switchboard.relay.addresses import IPAddress, IPNetwork, client_of, is_exempt

THRESHOLD = 5
WINDOW_SECONDS = 300.0
BLOCK_SECONDS = 3600.0
CAPACITY = 65536


class FailureTracker:
    def __init__(
        self,
        *,
        threshold: int = THRESHOLD,
        window: float = WINDOW_SECONDS,
        block: float = BLOCK_SECONDS,
        capacity: int = CAPACITY,
    ) -> None:
        self.threshold = threshold
        self.window = dt.timedelta(seconds=window)
        self.block = dt.timedelta(seconds=block)
        self.capacity = capacity
        self._failures: OrderedDict[IPNetwork, deque[dt.datetime]] = OrderedDict()
        self._blocked: dict[IPNetwork, dt.datetime] = {}

    def is_blocked(self, address: IPAddress, now: dt.datetime) -> bool:
        client = client_of(address)
        until = self._blocked.get(client)
        if until is None:
            return False
        if now >= until:
            del self._blocked[client]
            return False
        return True

    def record_failure(self, address: IPAddress, now: dt.datetime) -> bool:
        """Count one failed handshake; True when this failure blocks the address. The failure of
        a handshake that began before its address was blocked neither blocks it again nor
        extends the block."""
        if is_exempt(address) or self.is_blocked(address, now):
            return False
        client = client_of(address)
        times = self._failures.pop(client, None)
        if times is None:
            times = deque(maxlen=self.threshold + 1)
            while len(self._failures) >= self.capacity:
                self._failures.popitem(last=False)
        times.append(now)
        self._failures[client] = times
        while times and now - times[0] > self.window:
            times.popleft()
        if len(times) <= self.threshold:
            return False
        del self._failures[client]
        if len(self._blocked) >= self.capacity:
            self._expire(now)
            if len(self._blocked) >= self.capacity:
                del self._blocked[min(self._blocked, key=self._blocked.__getitem__)]
        self._blocked[client] = now + self.block
        return True

    def blocked_count(self, now: dt.datetime) -> int:
        self._expire(now)
        return len(self._blocked)

    def tracked_count(self) -> int:
        return len(self._failures)

    def _expire(self, now: dt.datetime) -> None:
        for client in [c for c, until in self._blocked.items() if now >= until]:
            del self._blocked[client]
