"""The counts behind the rooms' limits that hold across ``serve`` processes: AI calls per
virtual number and per caller's address, a lobby's waiting peers (decision 0854).

``LocalCounts`` keeps them in this process (one ``serve`` process, no fan-out).
``SharedCounts`` keeps them in the fan-out's Redis as well, one hash per limit with a field per
process holding that process's share; a share counts only while its process's liveness key
lives, so a process that dies gives its places back once that key expires.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple, Protocol

from redis.exceptions import RedisError

from switchboard.platform.rooms.fanout import NODE_KEY, NODE_TTL_SECONDS, PREFIX, Fanout, FanoutLost

log = logging.getLogger("switchboard.rooms")


class Bound(NamedTuple):
    key: str  # what is counted, e.g. ``calls_per_number(tenant, number)``
    most: int


def calls_per_number(tenant_id: int, number: str) -> str:
    return f"{PREFIX}calls:number:{tenant_id}:{number}"


def calls_per_ip(ip: str) -> str:
    return f"{PREFIX}calls:ip:{ip}"


class Counts(Protocol):
    async def take(self, *bounds: Bound) -> Bound | None:
        """One more of each bound's key, unless one of them holds ``most`` already: nothing is
        taken then, and the first such bound is returned."""

    async def give(self, *keys: str) -> None:
        """One less of each key (what ``take`` took); never fails."""


class LocalCounts:
    """The counts of this process alone."""

    def __init__(self) -> None:
        self.held: Counter[str] = Counter()  # this process's share of each key

    async def take(self, *bounds: Bound) -> Bound | None:
        full = next((bound for bound in bounds if self.held[bound.key] >= bound.most), None)
        if full is None:
            self.held.update(bound.key for bound in bounds)
        return full

    async def give(self, *keys: str) -> None:
        for key in keys:
            self.held[key] -= 1
            if self.held[key] <= 0:
                del self.held[key]


# KEYS: the bounds' hashes. ARGV: this process's node id, the prefix of the liveness keys, the
# hashes' expiry, then each bound's most, then this process's share of each once taken.
# The fields of processes whose liveness key is gone are deleted as they are met; the shares
# are written only when every bound has room, so the check and the take are one step.
TAKE = """
local node, alive, ttl, n = ARGV[1], ARGV[2], ARGV[3], #KEYS
for i, key in ipairs(KEYS) do
  local total = tonumber(ARGV[3 + n + i])
  local fields = redis.call('hgetall', key)
  for j = 1, #fields, 2 do
    if fields[j] ~= node then
      if redis.call('exists', alive .. fields[j]) == 1 then
        total = total + tonumber(fields[j + 1])
      else
        redis.call('hdel', key, fields[j])
      end
    end
  end
  if total > tonumber(ARGV[3 + i]) then
    return i
  end
end
for i, key in ipairs(KEYS) do
  redis.call('hset', key, node, ARGV[3 + n + i])
  redis.call('expire', key, ttl)
end
return 0
"""


class SharedCounts(LocalCounts):
    """The counts of every process sharing the fan-out's Redis. ``held`` is this process's
    share, written to its field of each key's hash after each change and again with each beat
    of its liveness key (which also keeps the hashes it has a share in from expiring), so a
    share a failed write or another process's cleanup left wrong is right again within
    ``HEARTBEAT_SECONDS``."""

    def __init__(self, fanout: Fanout) -> None:
        super().__init__()
        self.fanout = fanout
        self._lock = asyncio.Lock()  # one change at a time: each write carries the whole share
        self._stale: set[str] = set()  # keys whose last write failed
        fanout.on_beat = self._rewrite

    async def take(self, *bounds: Bound) -> Bound | None:
        """``FanoutLost`` when Redis does not answer: the caller is refused, not let through
        uncounted, and the fan-out counts as lost (its rooms' sockets are closed to rejoin)."""
        async with self._lock:
            shares = [self.held[bound.key] + 1 for bound in bounds]
            try:
                full = int(await self.fanout.redis.eval(
                    TAKE, len(bounds), *(bound.key for bound in bounds),
                    self.fanout.node, NODE_KEY, NODE_TTL_SECONDS,
                    *(bound.most for bound in bounds), *shares,
                ))  # fmt: skip
            except (RedisError, OSError) as exc:
                failure = exc
            else:
                if not full:
                    self.held.update(bound.key for bound in bounds)
                return bounds[full - 1] if full else None
        reason = f"cannot count a limit: {failure}"
        await self.fanout.lose(reason)  # outside the lock: the closed sockets give theirs back
        raise FanoutLost(reason) from failure

    async def give(self, *keys: str) -> None:
        async with self._lock:
            await super().give(*keys)
            try:
                await self._write(keys)
            except (RedisError, OSError) as exc:  # written again with the next beat
                log.warning("room limits: a share could not be written: %s", exc)
                self._stale.update(keys)

    async def _rewrite(self) -> None:
        async with self._lock:
            await self._write([*self.held, *self._stale])
            self._stale.clear()

    async def _write(self, keys: Iterable[str]) -> None:
        node = self.fanout.node
        async with self.fanout.redis.pipeline(transaction=True) as pipe:
            for key in keys:
                if key in self.held:
                    pipe.hset(key, node, self.held[key])
                    pipe.expire(key, NODE_TTL_SECONDS)
                else:
                    pipe.hdel(key, node)
            await pipe.execute()
