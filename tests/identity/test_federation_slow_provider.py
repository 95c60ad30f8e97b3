"""A slow or failing provider delays only its own sign-ins. No transaction is open while a
provider answers, so it does not hold up the writes of others (on SQLite a write transaction
holds the process's one write turn): the provider below holds its answer until the test releases
it, and meanwhile another tenant's sign-in, a write, must complete. A failed discovery is kept
for a short while instead of being asked again at every sign-in."""

from __future__ import annotations

import asyncio

import pytest
from httpx import AsyncClient

from switchboard.identity.federation.broker import FAILURE_SECONDS
from switchboard.identity.federation.secrets import SecretValue
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.factories import TenantFixture
from tests.identity.federation_helpers import (
    DISCOVERY,
    FakeProvider,
    add_provider,
    app,
    browser,
    provider,
    sign_in,
    signed_in,
    start_url,
)

__all__ = ["app", "browser", "provider"]

# Far below the broker's 10-second timeout, after which a held transaction would end anyway;
# far above what the other tenant's sign-in takes (milliseconds).
BOUND_SECONDS = 5.0


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"federation_allow_private": ("127.0.0.1/32",)})


async def _write_of_another_tenant(browser: AsyncClient, globex: TenantFixture) -> None:
    """globex's password sign-in at its token endpoint, which runs in a write transaction."""
    token = await asyncio.wait_for(globex.token(browser), timeout=BOUND_SECONDS)
    assert token


@pytest.mark.parametrize("path", [DISCOVERY, "/token"])
async def test_a_held_provider_does_not_hold_another_tenants_writes(
    runtime: Runtime,
    browser: AsyncClient,
    provider: FakeProvider,
    globex: TenantFixture,
    path: str,
) -> None:
    await add_provider(runtime, provider.issuer, SecretValue("cs"))
    release = provider.hold(path)
    if path == DISCOVERY:
        waiting = asyncio.create_task(browser.get(start_url()))
    else:
        started = await browser.get(start_url())
        at_provider = await browser.get(started.headers["location"])
        waiting = asyncio.create_task(browser.get(at_provider.headers["location"]))
    await asyncio.wait_for(provider.arrived[path].wait(), timeout=BOUND_SECONDS)

    await _write_of_another_tenant(browser, globex)
    assert not waiting.done()  # the provider has still not answered

    release.set()
    answer = await waiting
    if path == DISCOVERY:
        assert answer.status_code == 302, answer.text
    else:
        signed_in(answer)


async def test_a_failed_discovery_is_kept_for_a_short_while(
    runtime: Runtime, browser: AsyncClient, provider: FakeProvider, clock: ManualClock
) -> None:
    provider.discovery_status = 500
    await add_provider(runtime, provider.issuer, SecretValue("cs"))
    for _ in range(3):
        page = await browser.get(start_url())
        assert page.status_code == 502, page.text
        assert "Partners cannot be reached" in page.text
    assert provider.paths() == [DISCOVERY]  # asked once
    provider.discovery_status = 200
    clock.advance(FAILURE_SECONDS - 1)
    assert (await browser.get(start_url())).status_code == 502
    clock.advance(1)
    signed_in(await sign_in(browser))  # asked again, and answered
    assert provider.paths()[:2] == [DISCOVERY, DISCOVERY]
