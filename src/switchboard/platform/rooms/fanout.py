"""Frames between the ``serve`` processes that share a room: Redis pub/sub, one channel per
tenant and room (decision 0840), a lock per room and a liveness key per process (0841), whose
beat also keeps this process's shares of the rooms' limits written (``counts``, 0854).

Pub/sub is at most once: when the subscribing connection or a publish fails, ``lost`` is
called once, and the hub closes the sockets of its rooms so their clients rejoin instead of
silently missing frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import orjson
import redis.asyncio as redis
from redis.asyncio.client import PubSub
from redis.asyncio.lock import Lock
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

log = logging.getLogger("switchboard.rooms")

Deliver = Callable[[str, dict[str, Any]], Awaitable[None]]
Lost = Callable[[str], Awaitable[None]]

PREFIX = "switchboard:rooms:"
NODE_KEY = PREFIX + "node:"  # + a process's id: its liveness key
HEARTBEAT_SECONDS = 5.0
NODE_TTL_SECONDS = 20  # a process silent this long is gone: its peers are dropped from rooms
LOCK_SECONDS = 60.0  # longer than any bridge request made while a room is locked
LOCK_WAIT_SECONDS = 30.0
LOCK_POLL_SECONDS = 1.0  # between looks at who holds a room's lock
# Deletes the lock only if it is still the holder's, as read.
BREAK_LOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end"
SUBSCRIBE_WAIT_SECONDS = 5.0


class FanoutLost(Exception):
    """Redis is out of reach: rooms shared with other processes cannot be served now."""


def channel_of(tenant_id: int, room: str) -> str:
    return f"{PREFIX}{tenant_id}:{room}"


class Fanout:
    """This process's connections to Redis: one to publish, lock and beat, one to listen."""

    def __init__(self, url: str, *, deliver: Deliver, lost: Lost) -> None:
        self.node = secrets.token_hex(6)
        # No retries: a subscription silently re-made after a reconnect would hide lost frames.
        self.redis = redis.from_url(
            url, socket_connect_timeout=5, socket_timeout=10, retry=Retry(NoBackoff(), 0),
            health_check_interval=HEARTBEAT_SECONDS,
        )  # fmt: skip
        self._deliver, self._lost = deliver, lost
        self._pubsub: PubSub | None = None
        self._reader: asyncio.Task[None] | None = None
        self._subscribed: dict[str, asyncio.Event] = {}
        self._beat_at = 0.0
        self.on_beat: Callable[[], Awaitable[None]] | None = None  # with each liveness beat

    async def subscribe(self, channel: str) -> None:
        """Listen on ``channel``; returns once Redis confirmed it, so no later frame is missed."""
        try:
            if self._pubsub is None:
                await self._beat(force=True)
                self._pubsub = self.redis.pubsub()
            pubsub = self._pubsub
            event = self._subscribed.get(channel)
            if event is None:
                event = self._subscribed[channel] = asyncio.Event()
                await pubsub.subscribe(channel)
                if self._reader is None or self._reader.done():
                    self._reader = asyncio.create_task(self._read(pubsub))
            async with asyncio.timeout(SUBSCRIBE_WAIT_SECONDS):
                await event.wait()
        except (RedisError, OSError, TimeoutError) as exc:
            self._subscribed.pop(channel, None)
            raise FanoutLost(f"cannot subscribe to the room's channel: {exc}") from exc

    async def unsubscribe(self, channel: str) -> None:
        self._subscribed.pop(channel, None)
        if self._pubsub is not None:
            with contextlib.suppress(RedisError, OSError):
                await self._pubsub.unsubscribe(channel)

    async def publish(self, channel: str, envelope: dict[str, Any]) -> None:
        """Hand ``envelope`` to the other processes; a failure counts as a lost connection."""
        try:
            await self.redis.publish(channel, orjson.dumps({**envelope, "node": self.node}))
        except (RedisError, OSError) as exc:
            await self._fail(self._pubsub, f"publish failed: {exc}")

    async def acquire(self, channel: str) -> Lock:
        """The room's lock across processes (held at most ``LOCK_SECONDS``). The lock names its
        holder (``<node>:<random>``): a lock whose process no longer beats (it died while
        holding it) is broken instead of waited out, so a crash does not freeze its rooms."""
        name = channel + ":lock"
        lock = self.redis.lock(name, timeout=LOCK_SECONDS, blocking_timeout=LOCK_POLL_SECONDS)
        token = f"{self.node}:{secrets.token_hex(8)}"
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        try:
            while not await lock.acquire(token=token):
                holder = await self.redis.get(name)
                if holder is not None and await self._orphaned(holder):
                    log.warning("room lock %s left by a stopped process: broken", name)
                    await self.redis.eval(BREAK_LOCK, 1, name, holder)
                elif time.monotonic() >= deadline:
                    raise FanoutLost("the room stayed locked by another process")
        except (RedisError, OSError) as exc:
            raise FanoutLost(f"cannot lock the room: {exc}") from exc
        return lock

    async def _orphaned(self, holder: bytes | str) -> bool:
        """Whether a lock's holder is a process that stopped beating (a token in another form
        is never taken for one)."""
        text = holder.decode(errors="replace") if isinstance(holder, bytes) else holder
        node, _, rest = text.partition(":")
        if not rest or node == self.node:
            return False
        return not await self.redis.exists(NODE_KEY + node)

    async def release(self, lock: Lock) -> None:
        try:
            await lock.release()
        except (RedisError, OSError) as exc:  # expired or out of reach: nothing to undo
            log.warning("room lock release failed: %s", exc)

    async def alive(self, nodes: Iterable[str]) -> set[str]:
        """Which of ``nodes`` (process ids) still beat; all of them when Redis cannot tell."""
        wanted = sorted(set(nodes))
        if not wanted:
            return set()
        try:
            values = await self.redis.mget([NODE_KEY + node for node in wanted])
        except (RedisError, OSError):
            return set(wanted)
        return {node for node, value in zip(wanted, values, strict=True) if value is not None}

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._pubsub is not None:
            with contextlib.suppress(RedisError, OSError):
                await self._pubsub.aclose()  # type: ignore[no-untyped-call]
        with contextlib.suppress(RedisError, OSError):
            await self.redis.aclose()

    async def _beat(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._beat_at >= HEARTBEAT_SECONDS:
            self._beat_at = now
            await self.redis.set(NODE_KEY + self.node, b"1", ex=NODE_TTL_SECONDS)
            if self.on_beat is not None:
                await self.on_beat()

    async def _read(self, pubsub: PubSub) -> None:
        try:
            while pubsub is self._pubsub:
                message = await pubsub.get_message(timeout=1.0)
                await self._beat()
                if message is None:
                    continue
                channel = message["channel"].decode()
                if message["type"] == "subscribe":
                    if (event := self._subscribed.get(channel)) is not None:
                        event.set()
                elif message["type"] == "message":
                    await self._take(channel, message["data"])
        except (RedisError, OSError) as exc:
            await self._fail(pubsub, f"subscription lost: {exc}")

    async def _take(self, channel: str, data: bytes) -> None:
        try:
            envelope = orjson.loads(data)
        except orjson.JSONDecodeError:
            log.warning("room channel %s: a frame that is not JSON was dropped", channel)
            return
        if not isinstance(envelope, dict) or envelope.get("node") == self.node:
            return
        try:
            await self._deliver(channel, envelope)
        except Exception:  # one bad frame must not stop the room's other frames
            log.exception("room channel %s: delivery failed", channel)

    async def lose(self, reason: str) -> None:
        """Another use of Redis failed: as for a failed publish, the rooms' sockets close."""
        await self._fail(self._pubsub, reason)

    async def _fail(self, pubsub: PubSub | None, reason: str) -> None:
        if pubsub is None or pubsub is not self._pubsub:
            return  # already reported for this connection
        self._pubsub = None
        self._subscribed.clear()
        with contextlib.suppress(RedisError, OSError):
            await pubsub.aclose()  # type: ignore[no-untyped-call]
        log.error("room fan-out: %s; closing the sockets of shared rooms", reason)
        await self._lost(reason)
