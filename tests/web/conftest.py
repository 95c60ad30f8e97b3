"""Both web apps served in-process, with a second admin of acme, "chief", to press the
buttons of the console's Users page."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from httpx import ASGITransport

from switchboard.app import create_app
from switchboard.identity import service as identity
from switchboard.runtime import Runtime
from switchboard.tenants.models import Tenant
from tests.console.signin import console_clients
from tests.factories import PASSWORD, TenantFixture


@pytest.fixture
async def transport(runtime: Runtime, acme: TenantFixture) -> AsyncIterator[ASGITransport]:
    await console_clients(runtime, acme)
    async with runtime.db.transaction() as session:
        tenant = await session.get(Tenant, acme.id)
        assert tenant is not None
        await identity.create_user(
            session, tenant=tenant, username="chief", password=PASSWORD, role="admin",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
    app = create_app(runtime=runtime)
    async with runtime.lifespan():
        yield ASGITransport(app=app)
