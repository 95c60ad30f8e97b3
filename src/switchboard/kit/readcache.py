"""Answers to authenticated reads, served again until the database changes (decision 0960).

An endpoint opts in with ``cacheable(request, until)`` once it has authenticated its caller:
its ``200`` answer may then be sent again to the very same request (method ``GET``, path, query
string, ``Authorization`` and ``Host`` headers alike) for as long as nothing was committed to the
database (``Changes.version()``) and the caller's verdict holds (``until``). ``ReadCache``
sits just inside the access log, so a repeated answer keeps its request id, log line and
latency metric, and goes past the routing, FastAPI's request handling and the database.

Everything an answer depends on (the rows, the caller's key, user, role and tenant) is in the
database, so a committed write anywhere is a change: on SQLite it is seen before the next
request, on PostgreSQL when its notification arrives. An entry lives at most ``MAX_AGE``
seconds, the cache holds at most ``entries`` answers of at most ``MAX_BODY`` bytes each, and an
answer that sets a cookie is never kept.

Requests that miss together share one answer: while a request whose answer was kept before is
answered again (its entry ended: a write committed, or the caller's verdict expired, every two
seconds for an API key), the same request arriving at the same version waits for it and is sent
what it keeps. Nothing committed between the first one's start and its end (or it keeps
nothing), and the later one arrived in between, so the answer holds for it too. Without that,
every such request in flight went through the application at once. Only an answer kept before
is waited for: a request never waits on one that might be long (a stream).
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from switchboard.kit.changes import Changes
from switchboard.kit.clock import Clock

MAX_AGE = 30.0
MAX_BODY = 512 * 1024
_UNTIL = "read_cache_until"

Key = tuple[str, bytes, bytes, bytes]


def cacheable(request: Request, until: float | None) -> None:
    """Allow this request's answer to be repeated until a write commits or ``until`` (a unix
    time: until when the verdict on the caller's credential holds, ``Caller.expires``)."""
    request.state.read_cache_until = math.inf if until is None else until


@dataclass(slots=True)
class Counts:
    """What the cache did since the process started (exported as metrics by ``ops``)."""

    hits: int = 0  # answered from the cache
    misses: int = 0  # asked with a credential, answered by the application
    kept: int = 0  # of those, answers stored


@dataclass(frozen=True, slots=True)
class _Entry:
    version: tuple[int, int]
    until: float
    route: Any
    root_path: str
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


class ReadCache:
    def __init__(
        self,
        app: ASGIApp,
        *,
        changes: Changes,
        clock: Clock,
        entries: int,
        counts: Counts | None = None,
    ) -> None:
        self.app = app
        self.counts = counts or Counts()
        self.changes = changes
        self.clock = clock
        self.capacity = entries
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        # The requests being answered, with the version each began at and its end.
        self._making: dict[Key, tuple[tuple[int, int], asyncio.Event]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or self.capacity <= 0:
            await self.app(scope, receive, send)
            return
        authorization = host = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
            elif name == b"host":
                host = value
        version = self.changes.version() if authorization else None
        if version is None:
            await self.app(scope, receive, send)
            return
        key = (scope["path"], scope["query_string"], authorization, host)
        now = self.clock.timestamp()
        making = self._making.get(key)
        if making is not None and making[0] == version:
            await making[1].wait()
        entry = self._entries.get(key)
        lead = False  # only a request whose answer was kept before: others may be streams
        if entry is not None:
            if entry.version == version and now < entry.until:
                self.counts.hits += 1
                await self._repeat(entry, scope, send)
                return
            del self._entries[key]
            lead = key not in self._making
        self.counts.misses += 1
        if not lead:
            await self._answer_and_keep(key, version, now, scope, receive, send)
            return
        done = asyncio.Event()
        self._making[key] = (version, done)
        try:
            await self._answer_and_keep(key, version, now, scope, receive, send)
        finally:
            del self._making[key]
            done.set()

    async def _repeat(self, entry: _Entry, scope: Scope, send: Send) -> None:
        scope["route"] = entry.route
        scope["root_path"] = entry.root_path
        await send(
            {"type": "http.response.start", "status": entry.status, "headers": entry.headers}
        )
        await send({"type": "http.response.body", "body": entry.body})

    async def _answer_and_keep(
        self,
        key: Key,
        version: tuple[int, int],
        now: float,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        start: Message | None = None
        chunks: list[bytes] = []
        size = 0

        async def capture(message: Message) -> None:
            nonlocal start, size
            if message["type"] == "http.response.start":  # copied: outer layers add theirs
                start = {**message, "headers": list(message.get("headers", ()))}
            elif message["type"] == "http.response.body" and size <= MAX_BODY:
                chunk = message.get("body", b"")
                chunks.append(chunk)
                size += len(chunk)
            await send(message)

        await self.app(scope, receive, capture)
        until = scope.get("state", {}).get(_UNTIL)
        if (
            until is None
            or start is None
            or start["status"] != 200
            or size > MAX_BODY
            or self.changes.version() != version  # written meanwhile: the answer may predate it
        ):
            return
        headers = start["headers"]
        if any(name.lower() == b"set-cookie" for name, _ in headers):
            return
        self.counts.kept += 1
        self._entries[key] = _Entry(
            version=version,
            until=min(until, now + MAX_AGE),
            route=scope.get("route"),
            root_path=scope.get("root_path", ""),
            status=200,
            headers=headers,
            body=b"".join(chunks),
        )
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
