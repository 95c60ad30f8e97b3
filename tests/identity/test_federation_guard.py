"""Every request to a provider goes through the SSRF guard of webhooks: the discovery URL, and
the token endpoint and JWKS its discovery names, reach only public addresses or those of
``SWITCHBOARD_FEDERATION_ALLOW_PRIVATE``. A refusal or a failed discovery is the sign-in's error
page (502 at the start, the login page with the reason at the callback), never a 500."""

from __future__ import annotations

import pytest
from httpx import AsyncClient

from switchboard.identity.federation.secrets import SecretValue
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.identity.federation_helpers import (
    FakeProvider,
    add_provider,
    app,
    browser,
    provider,
    sign_in,
    start_url,
)
from tests.ports import free_port

__all__ = ["app", "browser", "provider"]


@pytest.fixture
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """Loopback's 127.0.0.1 opened (the provider's issuer), not 127.0.0.2 (``elsewhere``), or
    the ranges a test gives as the fixture's parameter."""
    allow = getattr(request, "param", ("127.0.0.1/32",))
    return settings.model_copy(update={"federation_allow_private": allow})


@pytest.mark.parametrize("settings", [()], indirect=True)  # no private range opened
async def test_a_private_issuer_is_refused_unless_the_operator_allows_it(
    runtime: Runtime, browser: AsyncClient, provider: FakeProvider
) -> None:
    await add_provider(runtime, provider.issuer, SecretValue("cs"))
    page = await browser.get(start_url())
    assert page.status_code == 502, page.text
    assert "127.0.0.1, which is not a public address" in page.text
    assert provider.seen == []


@pytest.mark.parametrize("endpoint", ["token_endpoint", "jwks_uri"])
async def test_a_discovered_endpoint_on_another_address_is_refused(
    runtime: Runtime, browser: AsyncClient, provider: FakeProvider, endpoint: str
) -> None:
    """The discovery document is the provider's to write: its token endpoint (which gets the
    client secret) and JWKS URL are held to the same rule as the issuer."""
    path = "/token" if endpoint == "token_endpoint" else "/jwks"
    provider.discovery[endpoint] = f"{provider.elsewhere}{path}"
    await add_provider(runtime, provider.issuer, SecretValue("cs-never-sent-elsewhere"))
    page = await sign_in(browser)
    assert page.status_code == 403, page.text
    assert "the sign-in with Partners failed" in page.text
    assert "127.0.0.2, which is not a public address" in page.text
    assert "Sign in with Partners" in page.text  # the login page again, with the reason
    assert provider.paths("127.0.0.2") == []


async def test_a_metadata_address_in_the_discovery_is_refused_without_connecting(
    runtime: Runtime, browser: AsyncClient, provider: FakeProvider
) -> None:
    provider.discovery["token_endpoint"] = "http://169.254.169.254/latest/meta-data/"
    await add_provider(runtime, provider.issuer, SecretValue("cs"))
    page = await sign_in(browser)
    assert page.status_code == 403, page.text
    assert "169.254.169.254, which is not a public address" in page.text


async def test_an_unreachable_provider_is_a_502_page(
    runtime: Runtime, browser: AsyncClient
) -> None:
    nobody = f"http://127.0.0.1:{free_port()}/nothing-listens"
    await add_provider(runtime, nobody, SecretValue("cs"))
    page = await browser.get(start_url())
    assert page.status_code == 502, page.text
    assert "Partners cannot be reached" in page.text
