"""Calls run against the in-process simulated bridge, fast: SWITCHBOARD_SIM_SPEED=2000."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy import event
from sqlalchemy.engine import Engine

from switchboard.app import create_app
from switchboard.identity import service as identity
from switchboard.kit.clock import ManualClock
from switchboard.platform.bridging.client import close_bridge
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants
from tests.calls.fakebridge import fake_bridge  # noqa: F401 (a fixture)
from tests.calls.smtpserver import mailbox  # noqa: F401 (a fixture)
from tests.conftest import PRIMARY_HOST
from tests.factories import PASSWORD


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"sim_speed": 2000})


@pytest.fixture
def statements() -> Iterator[list[str]]:
    """Every SQL statement any engine of this process executes meanwhile."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    event.listen(Engine, "before_cursor_execute", record)
    yield seen
    event.remove(Engine, "before_cursor_execute", record)


@pytest.fixture(autouse=True)
async def _close_bridge(runtime: Runtime) -> AsyncIterator[None]:
    yield
    await close_bridge(runtime)


@dataclass
class Org:
    """A tenant with one admin, authenticated by an API key (cheaper than password grants)."""

    id: int
    name: str
    host: str
    headers: dict[str, str]


async def make_org(runtime: Runtime, name: str, host: str) -> Org:
    async with runtime.db.transaction() as session:
        tenant = await tenants.create_tenant(
            session, name=name, domains=[host], clock=runtime.clock, box=runtime.box
        )
        user = await identity.create_user(
            session, tenant=tenant, username="admin", password=PASSWORD, role="admin",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        _, key = await identity.create_api_key(
            session, tenant_id=tenant.id, user=user, name="tests", clock=runtime.clock
        )
    return Org(id=tenant.id, name=name, host=host, headers={"Authorization": f"Bearer {key}"})


@pytest.fixture
async def org(runtime: Runtime) -> Org:
    return await make_org(runtime, "acme", PRIMARY_HOST)


@pytest.fixture
async def other_org(runtime: Runtime) -> Org:
    return await make_org(runtime, "globex", "globex.test")


@pytest.fixture
async def client_with(settings: Settings) -> AsyncIterator[Any]:
    """A second application over the same database, with different bridge settings."""
    base = settings
    opened: list[tuple[Runtime, AsyncClient]] = []

    async def make(**overrides: Any) -> tuple[Runtime, AsyncClient]:
        settings = base.model_copy(update=overrides)
        runtime = Runtime(settings, clock=ManualClock())
        client = AsyncClient(transport=ASGITransport(app=create_app(runtime=runtime)),
                             base_url=f"http://{PRIMARY_HOST}")  # fmt: skip
        opened.append((runtime, client))
        return runtime, client

    yield make
    for runtime, client in opened:
        await client.aclose()
        await close_bridge(runtime)
        await runtime.db.dispose()
