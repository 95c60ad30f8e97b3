"""The platform's side of the bridge protocol: dial, hang up, status, health.

``SWITCHBOARD_BRIDGE_URL`` chooses the bridge: empty runs the simulated bridge in this process
(reached over HTTP through an in-process transport), a URL names an external bridge, ``none``
means no bridge is configured (POST /v1/calls answers 503).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp
import httpx
import orjson

from switchboard.bridge import protocol
from switchboard.bridge.protocol import CallRef, DialRequest, StatusReply
from switchboard.kit.errors import ApiError, BadGateway, ServiceUnavailable
from switchboard.runtime import PerRuntime

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from switchboard.bridge.simulator import SimulatedBridge
    from switchboard.runtime import Runtime

SIMULATOR_BASE = "http://bridge-sim.internal"
CONNECT_SECONDS = 3.0
TIMEOUT_SECONDS = 10.0
TIMEOUT = httpx.Timeout(TIMEOUT_SECONDS, connect=CONNECT_SECONDS)
# How long `/readyz` waits for the bridge's health answer.
READINESS_SECONDS = 2.0
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
        keeper: Keeper | None = None,
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


class Keeper(Protocol):
    """Kept informed of the dials of a bridge run in this process (``callbacks.local``)."""

    def poke(self) -> None: ...

    async def aclose(self) -> None: ...


LocalBridge = Callable[["Runtime", str], BridgeClient]
# The bridge run in this process when SWITCHBOARD_BRIDGE_URL is empty: the simulator, whose
# callbacks go to the platform's bridge endpoints. Those are built on the platform's services,
# and the services on this client, so it is assembled above them (``callbacks.local``) and
# registered here by the application and the worker as they start (``run_in_process``).
_local: list[LocalBridge] = []


def run_in_process(factory: LocalBridge) -> None:
    """Register how to make the bridge of a process that names none: ``factory(runtime,
    callback_url)``."""
    _local[:] = [factory]


def bridge_secret(runtime: Runtime) -> str:
    return protocol.derive_secret(runtime.settings.bridge_secret, runtime.settings.secret_key)


def _new_client(runtime: Runtime) -> BridgeClient:
    """The bridge client ``SWITCHBOARD_BRIDGE_URL`` names; 503 ``bridge_not_configured`` when
    there is none."""
    settings = runtime.settings
    url = settings.bridge_url.strip()
    callback_url = settings.public_base_url + protocol.CALLBACK_PATH
    if url.lower() == "none":
        raise ServiceUnavailable("no media bridge is configured (SWITCHBOARD_BRIDGE_URL=none)")
    if url:
        if not settings.bridge_secret:
            raise ServiceUnavailable("an external media bridge needs SWITCHBOARD_BRIDGE_SECRET")
        return BridgeClient(base_url=url, secret=settings.bridge_secret, callback_url=callback_url)
    return _in_process(runtime, callback_url)


# This process's bridge client, made on first use.
bridge_for = PerRuntime(_new_client)


def _in_process(runtime: Runtime, callback_url: str) -> BridgeClient:
    if not _local:
        raise RuntimeError("no in-process bridge is registered (bridging.client.run_in_process)")
    return _local[0](runtime, callback_url)


async def close_bridge(runtime: Runtime) -> None:
    client = bridge_for.pop(runtime)
    if client is not None:
        await client.aclose()


async def bridge_readiness(runtime: Runtime) -> str:
    """The bridge's state for ``/readyz``: ``simulator`` (built in), ``not-configured``
    (``none``), ``ok`` (its health answered in time) or ``unavailable``."""
    url = runtime.settings.bridge_url.strip()
    if not url or url.lower() == "none":
        return "not-configured" if url else "simulator"
    try:
        await asyncio.wait_for(bridge_for(runtime).health(), READINESS_SECONDS)
    except Exception:  # unreachable, refused or slow: not ready
        return "unavailable"
    return "ok"
