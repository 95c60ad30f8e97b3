"""Fixtures of the bridge tests: one bridge process per module (its trunks point at ports the
tests' sipp instances take), and the platform on a real port per test, on each database."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from switchboard.app import create_app
from switchboard.kit.clock import ManualClock
from switchboard.platform.bridging.client import close_bridge
from switchboard.platform.numbers import service as numbers
from switchboard.platform.routing import service as routing
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.asgiserve import serving
from tests.calls.conftest import make_org
from tests.conftest import PRIMARY_HOST
from tests.factories import TenantFixture
from tests.mediabridge.components import (
    SECRET,
    BridgeProcess,
    SilentTrunk,
    free_port,
)
from tests.mediabridge.rawsip import Caller, Udp
from tests.webhooks.conftest import receiver  # noqa: F401 (a fixture)

# trunk id -> extra TOML lines; each trunk gets its own loopback port
TRUNKS: dict[str, str] = {
    "echo": "",
    "pcma": "",
    "bye": "",
    "ring": "ring_timeout_sec = 1",
    "busy": "",
    "decline": "",
    "missing": "",
    "spare": "",
    "down": "",
    "silent": "",
    "auth": 'username = "acct"\npassword_env = "TEST_TRUNK_PASSWORD"\nfrom_domain = "pbx.test"',
    "tcp": 'transport = "tcp"',
    "hold": "",
    "hangup": "",
    "routed": "",
}
TRUNK_PASSWORD = "s3cret-digest"
# the secrets of Platform.receptionist's number, which the bridge must never log
RECEPTIONIST_KEY = "desk-ai-key"
RECEPTIONIST_PROMPT = "You are the desk."


# The bridge's SIP and RTP handling does not depend on the platform's database: the modules that
# attack or exercise only it run on SQLite alone (the storage tests run on both backends).
BRIDGE_ONLY = pytest.mark.bridge_only


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the PostgreSQL runs of the ``bridge_only`` tests."""
    dropped = [
        item
        for item in items
        if item.get_closest_marker("bridge_only") is not None
        and getattr(getattr(item, "callspec", None), "params", {}).get("db_url") == "postgres"
    ]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


@dataclass
class Bridge:
    process: BridgeProcess
    ports: dict[str, int]
    workdir: Path


def write_trunks(path: Path, ports: dict[str, int]) -> None:
    tables = []
    for trunk_id, extra in TRUNKS.items():
        tables.append(f'[trunks.{trunk_id}]\nuri = "sip:127.0.0.1:{ports[trunk_id]}"\n{extra}\n')
    path.write_text("\n".join(tables))


@pytest.fixture(scope="module")
def platform_port() -> int:
    """The platform's port for the whole module: the bridge asks it about inbound calls."""
    return free_port(socket.SOCK_STREAM)


@pytest.fixture(scope="module")
def bridge_options() -> list[str]:
    """More options of ``bridge serve`` for the module's bridge (a test module sets its own)."""
    return []


@pytest.fixture(scope="module")
def bridge(
    tmp_path_factory: pytest.TempPathFactory, platform_port: int, bridge_options: list[str]
) -> Iterator[Bridge]:
    workdir = tmp_path_factory.mktemp("bridge")
    ports = {trunk_id: free_port() for trunk_id in TRUNKS}
    trunks = workdir / "trunks.toml"
    write_trunks(trunks, ports)
    process = BridgeProcess(
        trunks=trunks, env={"TEST_TRUNK_PASSWORD": TRUNK_PASSWORD}, options=bridge_options
    )
    process.start(workdir, platform_url=f"http://127.0.0.1:{platform_port}")
    try:
        yield Bridge(process=process, ports=ports, workdir=workdir)
    finally:
        process.kill()


@dataclass
class Platform:
    runtime: Runtime
    http: httpx.AsyncClient
    headers: dict[str, str]
    tenant_id: int
    url: str
    tenant: str = "acme"

    @property
    def fixture(self) -> TenantFixture:
        return TenantFixture(id=self.tenant_id, name=self.tenant, host=PRIMARY_HOST)

    async def route(self, phone: str, trunk_ids: list[str]) -> None:
        async with self.runtime.db.transaction() as session:
            await routing.create_outbound(
                session, tenant_id=self.tenant_id, match=phone, trunk_ids=trunk_ids
            )

    async def receptionist(self, did: str) -> None:
        """A virtual number for ``did``: its inbound calls reach the bridge's engine."""
        async with self.runtime.db.transaction() as session:
            await numbers.create_number(
                session, tenant_id=self.tenant_id, name="Desk", number=did, voice="Kore",
                language="de-DE", api_key=RECEPTIONIST_KEY, system_prompt=RECEPTIONIST_PROMPT,
                box=self.runtime.box, clock=self.runtime.clock,
            )  # fmt: skip

    async def place(self, phone: str, **extra: Any) -> str:
        from tests.calls.helpers import call_body

        response = await self.http.post(
            "/api.ashx/v1/calls", json=call_body(phone, **extra), headers=self.headers
        )
        assert response.status_code == 200, response.text
        call_id: str = response.json()["callId"]
        return call_id

    async def record(self, call_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/api.ashx/v1/calls/{call_id}", headers=self.headers)
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    async def ended(self, call_id: str, within: float = 30.0) -> dict[str, Any]:
        """The call's record once the attempt closed (real processes: polled over HTTP)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            data = await self.record(call_id)
            if data["status"] not in ("dispatching", "in-flight"):
                return data
            assert loop.time() < deadline, f"call {call_id} still {data['status']}"
            await asyncio.sleep(0.1)


@pytest.fixture
def bridge_url(bridge: Bridge) -> str:
    """The bridge the platform dials (a test module may bring its own)."""
    return bridge.process.url


@pytest.fixture
async def platform(
    settings: Settings, bridge_url: str, platform_port: int
) -> AsyncIterator[Platform]:
    port = platform_port
    url = f"http://127.0.0.1:{port}"
    settings = settings.model_copy(
        update={
            "public_base_url": url,
            "bridge_url": bridge_url,
            "bridge_secret": SECRET,
            "webhook_allow_private": ("127.0.0.0/8",),
        }
    )
    runtime = Runtime(settings, clock=ManualClock())
    # The server shares the test's event loop with its client. When a loaded run stalls that
    # loop for more than uvicorn's 5 s keep-alive, the client's wake-up and the idle
    # connection's expiry come due together; the client sends on the connection the server then
    # closes ("Server disconnected without sending a response"). Idle connections stay.
    served = serving(
        create_app(runtime=runtime), port=port, within=60, lifespan="off", timeout_keep_alive=600
    )
    try:
        async with served:
            org = await make_org(runtime, "acme", PRIMARY_HOST)
            # generous: on a loaded machine one POST /v1/calls, which dials the bridge process
            # while this loop also serves the bridge's callbacks, has taken over 20 s
            http = httpx.AsyncClient(base_url=url, headers={"Host": PRIMARY_HOST}, timeout=60)
            try:
                yield Platform(
                    runtime=runtime, http=http, headers=org.headers, tenant_id=org.id, url=url
                )
            finally:
                await http.aclose()
    finally:
        await close_bridge(runtime)
        await runtime.db.dispose()


@pytest.fixture
async def silent_trunk(bridge: Bridge) -> AsyncIterator[SilentTrunk]:
    async with SilentTrunk.on(bridge.ports["silent"]) as trunk:
        yield trunk


# A module that calls the bridge over raw UDP names its number ``DID``: the fixtures below call
# it, and give it to the AI.


@pytest.fixture
async def receptionist(platform: Platform, request: pytest.FixtureRequest) -> Platform:
    """The module's ``DID``, answered by the AI (the bridge's engine)."""
    await platform.receptionist(request.module.DID)
    return platform


@pytest.fixture
async def caller(bridge: Bridge, request: pytest.FixtureRequest) -> AsyncIterator[Caller]:
    """A caller of the module's ``DID``, writing SIP byte by byte."""
    udp = await Udp.open()
    yield Caller(udp, bridge.process.sip_port, did=request.module.DID)
    udp.close()


@pytest.fixture
async def phone() -> AsyncIterator[Udp]:
    """The caller's RTP socket, the one its SDP names."""
    udp = await Udp.open()
    yield udp
    udp.close()
