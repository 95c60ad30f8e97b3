"""The bridge's client of the platform: signed callbacks, and the inbound-route question.

Callbacks follow docs/bridge-protocol.md: ``404``, ``409``, ``429``, ``5xx`` and network errors
are retried with a delay doubling from 20 ms to 8 s, then the event is given up; ``400`` and
``401`` are not retried. One call's events go through one ``EventQueue``, so they leave one at a
time, in the order they happened.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable

import httpx
import orjson

from switchboard.bridge import protocol
from switchboard.bridge.protocol import (
    Callback,
    InboundRouteReply,
    InboundRouteRequest,
    RoomCallback,
)

log = logging.getLogger("switchboard.mediabridge.platform")

RETRY_DELAYS = (0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 8.0)
TIMEOUT = httpx.Timeout(10.0, connect=3.0)


class PlatformError(Exception):
    """The platform could not answer a question: ``passing`` when it was unreachable or failing
    (a network error, 5xx), otherwise it refused the question or answered what cannot be read,
    or no platform is configured (decision 0328)."""

    def __init__(self, message: str, *, passing: bool = False) -> None:
        super().__init__(message)
        self.passing = passing


class PlatformClient:
    def __init__(
        self,
        *,
        secret: str,
        platform_url: str = "",
        http: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._secret = secret
        self.platform_url = platform_url.rstrip("/")
        self._http = http or httpx.AsyncClient(timeout=TIMEOUT)
        self._sleep = sleep

    async def aclose(self) -> None:
        await self._http.aclose()

    def _signed(self, payload: dict[str, object]) -> tuple[bytes, dict[str, str]]:
        body = orjson.dumps(payload)
        return body, {
            protocol.SIGNATURE_HEADER: protocol.sign(self._secret, body),
            "Content-Type": "application/json",
        }

    async def post_event(self, url: str, event: Callback | RoomCallback) -> bool:
        """Deliver one event; True once the platform recorded it (or called it a duplicate)."""
        body, headers = self._signed(event.model_dump(mode="json"))
        about = event.call_id if isinstance(event, Callback) else f"{event.tenant}/{event.room}"
        for delay in (*RETRY_DELAYS, None):
            try:
                response = await self._http.post(url, content=body, headers=headers)
            except httpx.HTTPError as exc:
                log.info("callback %s of %s failed: %s", event.type, about, type(exc).__name__)
            else:
                status = response.status_code
                if status < 300:
                    return True
                if status in (400, 401) or (status < 500 and status not in (404, 409, 429)):
                    log.warning("callback %s of %s refused: HTTP %s", event.type, about, status)
                    return False
            if delay is None:
                break
            await self._sleep(delay)
        log.warning("gave up on callback %s of %s", event.type, about)
        return False

    async def post_room_event(self, event: RoomCallback) -> bool:
        """Report an SFU connection to the platform's room-events path."""
        if not self.platform_url:
            log.warning("room event %s not reported: no platform URL is configured", event.type)
            return False
        return await self.post_event(self.platform_url + protocol.ROOM_EVENTS_PATH, event)

    async def inbound_route(self, request: InboundRouteRequest) -> InboundRouteReply | None:
        """Who answers an inbound INVITE; ``None`` when the platform has no route (404)."""
        if not self.platform_url:
            raise PlatformError("no platform URL is configured for inbound calls")
        body, headers = self._signed(request.model_dump(mode="json"))
        url = self.platform_url + protocol.INBOUND_ROUTE_PATH
        try:
            response = await self._http.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise PlatformError(
                f"the platform is unreachable ({type(exc).__name__})", passing=True
            ) from None
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise PlatformError(
                f"the platform answered HTTP {response.status_code}",
                passing=response.status_code >= 500,
            )
        try:
            return InboundRouteReply.model_validate_json(response.content)
        except ValueError:
            raise PlatformError("the platform's inbound route is malformed") from None


def event_id() -> str:
    return secrets.token_hex(8)


class EventQueue:
    """One call's callbacks, delivered one after the other in the order they were queued."""

    def __init__(self, client: PlatformClient, url: str) -> None:
        self._client = client
        self._url = url
        self._queue: asyncio.Queue[Callback | None] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._run())
        self.delivered: list[str] = []

    def emit(self, event: Callback) -> None:
        self._queue.put_nowait(event)

    async def _run(self) -> None:
        while (event := await self._queue.get()) is not None:
            if await self._client.post_event(self._url, event):
                self.delivered.append(event.type)

    async def drain(self) -> None:
        """Deliver what is queued, then stop."""
        self._queue.put_nowait(None)
        await self._task
