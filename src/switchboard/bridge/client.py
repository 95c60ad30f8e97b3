"""The platform's side of the bridge protocol: dial, hang up, status, health.

``SWITCHBOARD_BRIDGE_URL`` chooses the bridge: empty runs the simulated bridge in this process
(reached over HTTP through an in-process transport), a URL names an external bridge, ``none``
means no bridge is configured (POST /v1/calls answers 503).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp
import httpx
import orjson

from switchboard.bridge import protocol
from switchboard.bridge.protocol import CallRef, DialRequest, StatusReply
from switchboard.kit.errors import ApiError, BadGateway, ServiceUnavailable

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from switchboard.bridge.simulator import SimulatedBridge
    from switchboard.runtime import Runtime

log = logging.getLogger("switchboard.bridge")

SIMULATOR_BASE = "http://bridge-sim.internal"
CONNECT_SECONDS = 3.0
TIMEOUT_SECONDS = 10.0
TIMEOUT = httpx.Timeout(TIMEOUT_SECONDS, connect=CONNECT_SECONDS)
# At most eight connections to an external bridge; dials beyond eight wait for a free one
# (decision 0930: a bridge answers a dial once accepted, so eight carry the dispatcher's dials).
POOL_SIZE = 8
# An external bridge's transport failures, named as they have always been reported (the names
# are part of the 502's description and of ``room.cascade.failed``'s error).
_FAILURE_NAMES: tuple[tuple[type[BaseException], str], ...] = (
    (aiohttp.ConnectionTimeoutError, "ConnectTimeout"),
    (aiohttp.ClientConnectorError, "ConnectError"),
    (aiohttp.ServerDisconnectedError, "RemoteProtocolError"),
    (TimeoutError, "ReadTimeout"),
    (aiohttp.ClientPayloadError, "ReadError"),
    (aiohttp.ClientResponseError, "RemoteProtocolError"),
)


class BridgeRejected(ApiError):
    """The bridge answered a request with an error status (502)."""

    status = 502
    code = "bridge_rejected"


class Unreachable(Exception):
    """The bridge could not be asked or did not answer; ``name`` says how (``ConnectError``)."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(detail)
        self.name = name


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class _Transport(Protocol):
    async def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> Reply: ...

    async def aclose(self) -> None: ...


class _NetworkTransport:
    """An external bridge over aiohttp: about a seventh of httpx's CPU per request here
    (docs/benchmarks/calls.md), which a POST /v1/calls and every dispatcher dial pay. The session is
    made on first use, inside the event loop that uses it."""

    def __init__(self, base_url: str) -> None:
        self._base_url = base_url
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=POOL_SIZE),
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=TIMEOUT_SECONDS + CONNECT_SECONDS,
                    sock_connect=CONNECT_SECONDS, sock_read=TIMEOUT_SECONDS,
                ),
                auto_decompress=False,
                cookie_jar=aiohttp.DummyCookieJar(),
            )  # fmt: skip
        return self._session

    async def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> Reply:
        try:
            async with self._open().request(
                method, self._base_url + path, data=body, headers=headers, allow_redirects=False
            ) as response:
                return Reply(response.status, await response.read())
        except (aiohttp.ClientError, TimeoutError) as exc:
            name = next(
                (n for kind, n in _FAILURE_NAMES if isinstance(exc, kind)), "TransportError"
            )
            raise Unreachable(name, str(exc)) from exc

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class _AsgiTransport:
    """The built-in simulator, reached over HTTP in this process (decision 0302)."""

    def __init__(self, base_url: str, app: ASGIApp) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url,
            transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
            timeout=TIMEOUT,
        )

    async def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> Reply:
        try:
            response = await self._http.request(method, path, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise Unreachable(type(exc).__name__, str(exc)) from exc
        return Reply(response.status_code, response.content)

    async def aclose(self) -> None:
        await self._http.aclose()


@dataclass(frozen=True, slots=True)
class RoomAnswer:
    """The bridge's answer to a room request, failures included: ``httpStatus`` 0 when the
    bridge could not be reached; ``code``, ``phase`` and ``error`` from its error body."""

    http_status: int
    body: dict[str, Any] = field(default_factory=dict)
    code: str = ""
    phase: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.http_status < 300


class BridgeClient:
    def __init__(
        self,
        *,
        base_url: str,
        secret: str,
        callback_url: str,
        simulator: SimulatedBridge | None = None,
        keeper: LeaseKeeper | None = None,
    ) -> None:
        self._keeper = keeper
        self.base_url = base_url.rstrip("/")
        self.callback_url = callback_url
        self.simulator = simulator
        self._secret = secret
        self._transport: _Transport = (
            _NetworkTransport(self.base_url)
            if simulator is None
            else _AsgiTransport(self.base_url, simulator.app)
        )

    async def aclose(self) -> None:
        if self._keeper is not None:
            await self._keeper.aclose()
        if self.simulator is not None:
            await self.simulator.aclose()
        await self._transport.aclose()

    async def _signed(self, path: str, payload: dict[str, object]) -> Reply:
        body = orjson.dumps(payload)
        headers = {
            protocol.SIGNATURE_HEADER: protocol.sign(self._secret, body),
            "Content-Type": "application/json",
        }
        return await self._transport.request("POST", path, body, headers)

    async def _post(self, path: str, payload: dict[str, object]) -> Reply:
        try:
            response = await self._signed(path, payload)
        except Unreachable as exc:
            raise BadGateway(f"the media bridge is unreachable ({exc.name})") from exc
        if response.status >= 500:
            raise BadGateway(f"the media bridge failed with HTTP {response.status}")
        if response.status >= 300:
            raise BridgeRejected(f"the media bridge refused the request: {response.text[:200]}")
        return response

    async def health(self) -> str:
        try:
            response = await self._transport.request("GET", "/v1/health", None, {})
        except Unreachable as exc:
            raise BadGateway(f"the media bridge is unreachable ({exc.name})") from exc
        if response.status != 200:
            raise BadGateway(f"the media bridge health check failed ({response.status})")
        return response.text

    async def dial(self, request: DialRequest) -> str:
        """Place one attempt; idempotent per (callId, attempt). Returns the raw reply body."""
        response = await self._post("/v1/calls", request.model_dump(mode="json"))
        if self._keeper is not None:
            self._keeper.poke()
        return response.text

    async def hangup(self, *, call_id: str, attempt: int, actor: str) -> None:
        ref = CallRef(call_id=call_id, attempt=attempt, actor=actor)
        await self._post(f"/v1/calls/{call_id}/hangup", ref.model_dump(mode="json"))

    async def status(self, *, call_id: str, attempt: int) -> StatusReply:
        ref = CallRef(call_id=call_id, attempt=attempt)
        response = await self._post(f"/v1/calls/{call_id}/status", ref.model_dump(mode="json"))
        return StatusReply.model_validate_json(response.content)

    async def ai_peer(self, request: protocol.AiPeerRequest) -> RoomAnswer:
        """Start the AI peer of a browser's call to a virtual number in a room."""
        return await self.room(protocol.ROOM_AI_PEER_PATH, request, phase="ai-peer")

    async def room(self, path: str, message: protocol.RoomRef, *, phase: str) -> RoomAnswer:
        """One room request (``protocol.ROOM_*_PATH``); never raises for the bridge's failures."""
        try:
            response = await self._signed(path, message.model_dump(mode="json"))
        except Unreachable as exc:
            error = f"the media bridge is unreachable ({exc.name}: {exc})"
            return RoomAnswer(0, code="bridge_unreachable", phase=phase, error=error)
        try:
            document = orjson.loads(response.content) if response.content else {}
        except orjson.JSONDecodeError:
            document = {}
        if not isinstance(document, dict):
            document = {}
        if 200 <= response.status < 300:
            return RoomAnswer(response.status, body=document, phase=phase)
        return RoomAnswer(
            response.status, body=document,
            code=str(document.get("code") or document.get("error") or "bridge_rejected"),
            phase=str(document.get("phase") or phase),
            error=str(document.get("error") or response.text)[:500],
        )  # fmt: skip


class LeaseKeeper:
    """Renews the leases of the calls this process's built-in simulator holds, while it holds
    any, so that another process's reconciliation does not take them for orphans (the API
    process may run without the dispatcher, whose pass renews them too)."""

    def __init__(self, runtime: Runtime, simulator: SimulatedBridge) -> None:
        self._runtime = runtime
        self._simulator = simulator
        self._task: asyncio.Task[None] | None = None

    def poke(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        from switchboard.platform.calls.tasks import heartbeat

        interval = self._runtime.settings.call_lease_seconds / 3
        while self._simulator.busy:
            await asyncio.sleep(interval)
            try:
                await heartbeat(self._runtime)
            except Exception:
                log.exception("renewing call leases failed")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


_clients: weakref.WeakKeyDictionary[Runtime, BridgeClient] = weakref.WeakKeyDictionary()


def bridge_secret(runtime: Runtime) -> str:
    return protocol.derive_secret(runtime.settings.bridge_secret, runtime.settings.secret_key)


def bridge_for(runtime: Runtime) -> BridgeClient:
    """This process's bridge client; raises 503 ``bridge_not_configured`` when there is none."""
    client = _clients.get(runtime)
    if client is not None:
        return client
    settings = runtime.settings
    url = settings.bridge_url.strip()
    callback_url = settings.public_base_url + protocol.CALLBACK_PATH
    if url.lower() == "none":
        raise ServiceUnavailable("no media bridge is configured (SWITCHBOARD_BRIDGE_URL=none)")
    if url:
        if not settings.bridge_secret:
            raise ServiceUnavailable("an external media bridge needs SWITCHBOARD_BRIDGE_SECRET")
        client = BridgeClient(
            base_url=url, secret=settings.bridge_secret, callback_url=callback_url
        )
    else:
        client = _in_process_simulator(runtime, callback_url)
    _clients[runtime] = client
    return client


def _in_process_simulator(runtime: Runtime, callback_url: str) -> BridgeClient:
    from switchboard.bridge.endpoints import create_bridge_callback_app
    from switchboard.bridge.simulator import SimulatedBridge

    secret = bridge_secret(runtime)
    callbacks = httpx.AsyncClient(
        transport=httpx.ASGITransport(
            app=create_bridge_callback_app(runtime), raise_app_exceptions=False
        ),
        base_url=runtime.settings.public_base_url,
        timeout=TIMEOUT,
    )
    simulator = SimulatedBridge(
        secret=secret, speed=runtime.settings.sim_speed, clock=runtime.clock,
        callback_client=callbacks,
    )  # fmt: skip
    return BridgeClient(
        base_url=SIMULATOR_BASE,
        secret=secret,
        callback_url=callback_url,
        simulator=simulator,
        keeper=LeaseKeeper(runtime, simulator),
    )


async def close_bridge(runtime: Runtime) -> None:
    client = _clients.pop(runtime, None)
    if client is not None:
        await client.aclose()
