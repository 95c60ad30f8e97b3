"""A client of the Janus gateway's HTTP REST transport (docs/decisions/0820-janus-http.md).

One Janus session per bridge: handles are attached to it, asynchronous plugin answers and the
connection events (``webrtcup``, ``hangup``) come back over one long poll. The session is kept
alive by the long poll and by a keepalive every ``KEEPALIVE_SEC``; when Janus loses it (a
restart), the next request opens a new one and ``on_reset`` tells the owner that every handle
of the old session is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

log = logging.getLogger("switchboard.mediabridge.rooms.janus")

KEEPALIVE_SEC = 25.0
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=10.0, connect=3.0)
POLL_TIMEOUT = aiohttp.ClientTimeout(total=45.0, connect=3.0)
EVENT_TIMEOUT_SEC = 10.0
# Janus core errors (apierror.h)
SESSION_NOT_FOUND = 458
HANDLE_NOT_FOUND = 459
JSEP_UNKNOWN_TYPE = 464
JSEP_INVALID_SDP = 465


class JanusUnreachable(Exception):
    """Janus did not answer (refused, timed out, or not a Janus answer)."""


class JanusError(Exception):
    """Janus or its plugin refused a request: ``code`` is Janus's numeric error code."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"{code} {reason}")
        self.code = code
        self.reason = reason


def _transaction() -> str:
    return secrets.token_hex(8)


@dataclass
class Handle:
    """One plugin handle: a PeerConnection on the Janus side."""

    client: JanusClient
    id: int
    session_id: int
    on_webrtcup: Callable[[Handle], None] | None = None
    on_hangup: Callable[[Handle, str], None] | None = None
    detached: bool = False
    labels: dict[str, str] = field(default_factory=dict)

    async def message(
        self, body: dict[str, Any], jsep: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Send a plugin message; the plugin's data and JSEP, whether it answered at once
        (synchronous requests) or in an event (``join``, ``start``...)."""
        return await self.client.message(self, body, jsep)

    async def info(self) -> dict[str, Any]:
        return await self.client.handle_info(self)

    async def detach(self) -> None:
        if self.detached:
            return
        self.detached = True
        self.client.forget(self)
        with contextlib.suppress(JanusError, JanusUnreachable):
            await self.client.request(f"/{self.session_id}/{self.id}", {"janus": "detach"})


class JanusClient:
    def __init__(
        self,
        url: str,
        *,
        admin_url: str = "",
        admin_secret: str = "",
        api_secret: str = "",
        on_reset: Callable[[], None] | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.admin_url = admin_url.rstrip("/")
        self._admin_secret = admin_secret
        self._api_secret = api_secret
        self.on_reset = on_reset
        self._http: aiohttp.ClientSession | None = None
        self._session_id: int | None = None
        self._opening: asyncio.Lock | None = None
        self._handles: dict[int, Handle] = {}
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def http(self) -> aiohttp.ClientSession:
        if self._http is None:
            self._http = aiohttp.ClientSession()
        return self._http

    async def aclose(self) -> None:
        session_id = self._session_id
        self._stop_tasks()
        if session_id is not None:
            with contextlib.suppress(JanusError, JanusUnreachable):
                await self.request(f"/{session_id}", {"janus": "destroy"})
        self._session_id = None
        if self._http is not None:
            await self._http.close()
            self._http = None

    def _stop_tasks(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()

    async def request(self, path: str, body: dict[str, Any], *, admin: bool = False,
                      ) -> dict[str, Any]:  # fmt: skip
        """POST one Janus API request; the reply, or ``JanusError`` for ``"janus": "error"``."""
        body = {**body, "transaction": body.get("transaction") or _transaction()}
        if admin:
            body["admin_secret"] = self._admin_secret
        elif self._api_secret:
            body["apisecret"] = self._api_secret
        url = (self.admin_url if admin else self.url) + path
        try:
            async with self.http.post(url, json=body, timeout=REQUEST_TIMEOUT) as response:
                reply = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise JanusUnreachable(
                f"Janus at {url} did not answer ({type(exc).__name__})"
            ) from None
        if not isinstance(reply, dict):
            raise JanusUnreachable(f"Janus at {url} answered something else than JSON")
        if reply.get("janus") == "error":
            error = reply.get("error") or {}
            code, reason = int(error.get("code", 0)), str(error.get("reason", ""))
            if code == SESSION_NOT_FOUND and not admin:
                self._lost()
            raise JanusError(code, reason)
        return reply

    def _lost(self) -> None:
        """The session is gone on the Janus side: so is every handle of it."""
        if self._session_id is None:
            return
        log.warning("the Janus session %s is gone; its handles are lost", self._session_id)
        self._session_id = None
        self._stop_tasks()
        self._handles.clear()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(JanusUnreachable("the Janus session was lost"))
        self._pending.clear()
        if self.on_reset is not None:
            self.on_reset()

    async def session(self) -> int:
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._session_id is None:
                reply = await self.request("", {"janus": "create"})
                self._session_id = int(reply["data"]["id"])
                self._tasks = [
                    asyncio.ensure_future(self._poll(self._session_id)),
                    asyncio.ensure_future(self._keepalive(self._session_id)),
                ]
            return self._session_id

    async def info(self) -> dict[str, Any]:
        """Janus's ``info`` answer (used as a health check)."""
        try:
            async with self.http.get(self.url + "/info", timeout=REQUEST_TIMEOUT) as response:
                reply = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise JanusUnreachable(f"Janus did not answer ({type(exc).__name__})") from None
        if not isinstance(reply, dict):
            raise JanusUnreachable("Janus answered something else than JSON")
        return reply

    async def attach(self, plugin: str) -> Handle:
        """A new handle; a session Janus no longer knows (it restarted) is replaced once."""
        session_id = await self.session()
        try:
            reply = await self.request(f"/{session_id}", {"janus": "attach", "plugin": plugin})
        except JanusError as exc:
            if exc.code != SESSION_NOT_FOUND:
                raise
            session_id = await self.session()
            reply = await self.request(f"/{session_id}", {"janus": "attach", "plugin": plugin})
        handle = Handle(client=self, id=int(reply["data"]["id"]), session_id=session_id)
        self._handles[handle.id] = handle
        return handle

    def forget(self, handle: Handle) -> None:
        self._handles.pop(handle.id, None)

    async def message(
        self, handle: Handle, body: dict[str, Any], jsep: dict[str, Any] | None
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        transaction = _transaction()
        waiting: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[transaction] = waiting
        request: dict[str, Any] = {"janus": "message", "body": body, "transaction": transaction}
        if jsep is not None:
            request["jsep"] = jsep
        try:
            reply = await self.request(f"/{handle.session_id}/{handle.id}", request)
            if reply.get("janus") == "ack":
                try:
                    reply = await asyncio.wait_for(waiting, EVENT_TIMEOUT_SEC)
                except TimeoutError:
                    raise JanusUnreachable("Janus did not answer the request in time") from None
        finally:
            self._pending.pop(transaction, None)
        data = ((reply.get("plugindata") or {}).get("data")) or {}
        if "error_code" in data:
            raise JanusError(int(data["error_code"]), str(data.get("error", "")))
        jsep_reply = reply.get("jsep")
        return data, jsep_reply if isinstance(jsep_reply, dict) else None

    async def handle_info(self, handle: Handle) -> dict[str, Any]:
        """The admin API's ``handle_info`` (needs the admin URL and secret)."""
        if not self.admin_url:
            raise JanusUnreachable("no Janus admin API is configured")
        reply = await self.request(
            f"/{handle.session_id}/{handle.id}", {"janus": "handle_info"}, admin=True
        )
        info = reply.get("info")
        return info if isinstance(info, dict) else {}

    async def _keepalive(self, session_id: int) -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_SEC)
            try:
                await self.request(f"/{session_id}", {"janus": "keepalive"})
            except JanusError:
                return
            except JanusUnreachable as exc:
                log.info("Janus keepalive failed: %s", exc)

    async def _poll(self, session_id: int) -> None:
        url = f"{self.url}/{session_id}?maxev=10"
        if self._api_secret:
            url += f"&apisecret={self._api_secret}"
        while True:
            try:
                async with self.http.get(url, timeout=POLL_TIMEOUT) as response:
                    events = await response.json(content_type=None)
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                log.info("Janus long poll failed: %s", type(exc).__name__)
                await asyncio.sleep(1.0)
                continue
            for event in events if isinstance(events, list) else [events]:
                if isinstance(event, dict):
                    self._dispatch(event)
                    if event.get("janus") == "error":
                        code = int((event.get("error") or {}).get("code", 0))
                        if code == SESSION_NOT_FOUND:
                            self._lost()
                            return

    def _dispatch(self, event: dict[str, Any]) -> None:
        kind = event.get("janus")
        transaction = event.get("transaction")
        if kind == "event" and isinstance(transaction, str):
            waiting = self._pending.get(transaction)
            if waiting is not None and not waiting.done():
                waiting.set_result(event)
                return
        handle = self._handles.get(int(event.get("sender") or 0))
        if handle is None:
            return
        if kind == "webrtcup" and handle.on_webrtcup is not None:
            handle.on_webrtcup(handle)
        elif kind == "hangup" and handle.on_hangup is not None:
            handle.on_hangup(handle, str(event.get("reason", "")))
