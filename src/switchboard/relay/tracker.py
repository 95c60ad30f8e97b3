"""The TLS auto-blacklist (spec 8.2.4): failed handshakes per IP, and the blocks they cause.

More than ``threshold`` failures from one IP within ``window`` seconds block it for ``block``
seconds. Memory is bounded: at most ``capacity`` addresses are tracked and at most ``capacity``
are blocked. When the failure table is full, the address whose latest failure is oldest is
evicted (an attacker spraying fresh addresses can only push out the stalest entries, and each
entry holds at most ``threshold + 1`` timestamps). When the block table is full, the block that
expires soonest is dropped. Exempt addresses are never tracked nor blocked.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict, deque

from switchboard.relay.addresses import IPAddress, is_exempt

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
        self._failures: OrderedDict[IPAddress, deque[dt.datetime]] = OrderedDict()
        self._blocked: dict[IPAddress, dt.datetime] = {}

    def is_blocked(self, address: IPAddress, now: dt.datetime) -> bool:
        until = self._blocked.get(address)
        if until is None:
            return False
        if now >= until:
            del self._blocked[address]
            return False
        return True

    def record_failure(self, address: IPAddress, now: dt.datetime) -> bool:
        """Count one failed handshake; True when this failure blocks the address. The failure of
        a handshake that began before its address was blocked neither blocks it again nor
        extends the block."""
        if is_exempt(address) or self.is_blocked(address, now):
            return False
        times = self._failures.pop(address, None)
        if times is None:
            times = deque(maxlen=self.threshold + 1)
            while len(self._failures) >= self.capacity:
                self._failures.popitem(last=False)
        times.append(now)
        self._failures[address] = times
        while times and now - times[0] > self.window:
            times.popleft()
        if len(times) <= self.threshold:
            return False
        del self._failures[address]
        if len(self._blocked) >= self.capacity and address not in self._blocked:
            self._expire(now)
            if len(self._blocked) >= self.capacity:
                del self._blocked[min(self._blocked, key=self._blocked.__getitem__)]
        self._blocked[address] = now + self.block
        return True

    def blocked_count(self, now: dt.datetime) -> int:
        self._expire(now)
        return len(self._blocked)

    def tracked_count(self) -> int:
        return len(self._failures)

    def _expire(self, now: dt.datetime) -> None:
        for address in [a for a, until in self._blocked.items() if now >= until]:
            del self._blocked[address]
