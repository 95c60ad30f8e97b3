"""Fixtures of the credential issuer's tests: the app with two tenants and their consoles, a
browser, the wallet's own connection and a software wallet."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

import pytest
from httpx import AsyncClient
from jwcrypto.jwk import JWK
from starlette.applications import Starlette

from switchboard.app import create_app
from switchboard.identity import clients
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.factories import TenantFixture
from tests.identity.issuance.steps import client
from tests.identity.software_wallet import BASE, SoftwareWallet


@pytest.fixture
async def app(
    runtime: Runtime, acme: TenantFixture, globex: TenantFixture, clock: ManualClock
) -> AsyncIterator[Starlette]:
    # The library stamps key binding JWTs with the real time: the clock starts there.
    clock.set(dt.datetime.now(dt.UTC).replace(microsecond=0))
    async with runtime.db.transaction() as session:
        for name, base in (("acme", BASE), ("globex", f"http://{globex.host}")):
            tenant = await tenants.require_by_name(session, name)
            await clients.ensure_console_client(
                session, tenant=tenant, base_url=base, clock=runtime.clock
            )
    application = create_app(runtime=runtime)
    async with runtime.lifespan():
        yield application


@pytest.fixture
async def browser(app: Starlette) -> AsyncIterator[AsyncClient]:
    async with client(app) as http:
        yield http


@pytest.fixture
async def device(app: Starlette) -> AsyncIterator[AsyncClient]:
    """The wallet's own connection: none of the browser's cookies."""
    async with client(app) as http:
        yield http


@pytest.fixture
def holder(app: Starlette, clock: ManualClock) -> SoftwareWallet:
    """A wallet whose proofs are stamped with the app's clock (set by ``app``)."""
    return SoftwareWallet(
        JWK.generate(kty="EC", crv="P-256", kid="unused-pid-issuer"),
        JWK.generate(kty="EC", crv="P-256"),
        int(clock.now().timestamp()),
    )
