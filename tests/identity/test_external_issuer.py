"""A tenant trusting an external OIDC issuer: tokens checked against its JWKS over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from httpx import AsyncClient
from joserfc import jwt
from joserfc.jwk import RSAKey

from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.factories import TenantFixture

ISSUER = "https://login.example.com/realms/acme"


@dataclass
class FakeIssuer:
    key: RSAKey
    url: str
    clock: ManualClock
    fetches: list[str] = field(default_factory=list)

    def now(self) -> int:
        return int(self.clock.now().timestamp())

    def token(self, **claims: object) -> str:
        now = self.now()
        body = {"iss": ISSUER, "sub": "ext-1", "iat": now, "exp": now + 300, "org": "acme"}
        body.update(claims)
        return jwt.encode({"alg": "RS256", "kid": "ext"}, body, self.key)


@pytest.fixture
async def issuer(clock: ManualClock) -> AsyncIterator[FakeIssuer]:
    key = RSAKey.generate_key(2048, parameters={"kid": "ext", "alg": "RS256"}, private=True)
    fake = FakeIssuer(key=key, url="", clock=clock)

    async def jwks(request: web.Request) -> web.Response:
        fake.fetches.append(request.path)
        return web.json_response({"keys": [key.as_dict(private=False)]})

    app = web.Application()
    app.router.add_get("/jwks", jwks)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    fake.url = f"http://127.0.0.1:{port}/jwks"
    yield fake
    await runner.cleanup()


def _bearer(token: str, host: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}"}
    if host is not None:
        headers["Host"] = host
    return headers


async def _trust(
    runtime: Runtime, tenant: str, issuer: FakeIssuer, *, tenant_claim: str = "org"
) -> None:
    async with runtime.db.transaction() as session:
        row = await tenants.require_by_name(session, tenant)
        await tenants.set_setting(session, row, "ExternalOidc:Issuer", ISSUER)
        await tenants.set_setting(session, row, "ExternalOidc:JwksUrl", issuer.url)
        await tenants.set_setting(session, row, "ExternalOidc:TenantClaim", tenant_claim)
        await tenants.set_setting(session, row, "ExternalOidc:RoleClaim", "roles")


async def test_external_tokens_are_validated_against_the_jwks(
    app_client: AsyncClient,
    acme: TenantFixture,
    globex: TenantFixture,
    runtime: Runtime,
    issuer: FakeIssuer,
) -> None:
    await _trust(runtime, "acme", issuer)
    url = "/api.ashx/v1/api-keys"

    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    admin = issuer.token(roles=["admin", "offline"])
    assert (await app_client.get(url, headers=bearer(admin))).status_code == 200
    assert (await app_client.get(url, headers=bearer(admin))).status_code == 200
    assert len(issuer.fetches) == 1  # the JWKS is cached

    user = issuer.token(roles=["user"])
    assert (await app_client.get(url, headers=bearer(user))).status_code == 403
    other_tenant = issuer.token(roles=["admin"], org="globex")
    assert (await app_client.get(url, headers=bearer(other_tenant))).status_code == 401
    expired = issuer.token(roles=["admin"], exp=issuer.now() - 10)
    assert (await app_client.get(url, headers=bearer(expired))).status_code == 401
    no_role = issuer.token()
    assert (await app_client.get(url, headers=bearer(no_role))).status_code == 401

    forged_key = RSAKey.generate_key(2048, parameters={"kid": "ext"}, private=True)
    forged = jwt.encode(
        {"alg": "RS256", "kid": "ext"},
        {"iss": ISSUER, "sub": "x", "exp": issuer.now() + 60, "org": "acme", "roles": "admin"},
        forged_key,
    )
    assert (await app_client.get(url, headers=bearer(forged))).status_code == 401


async def test_untrusted_issuer_is_refused(
    app_client: AsyncClient, acme: TenantFixture, issuer: FakeIssuer
) -> None:
    token = issuer.token(roles=["admin"])  # acme does not trust this issuer
    response = await app_client.get(
        "/api.ashx/v1/api-keys", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 401
    assert issuer.fetches == []


async def _whoami(client: AsyncClient, token: str, host: str) -> tuple[int, str | None]:
    response = await client.get("/oidc.ashx/userinfo", headers=_bearer(token, host))
    return response.status_code, response.json().get("tenant")


async def test_a_tenant_trusting_the_same_issuer_cannot_take_over_anothers_tokens(
    app_client: AsyncClient,
    globex: TenantFixture,  # made first: globex is the lower tenant id
    acme: TenantFixture,
    runtime: Runtime,
    issuer: FakeIssuer,
) -> None:
    """globex's admin trusts acme's issuer without a tenant claim: on acme's host acme's tokens
    stay acme's; globex's trust applies on globex's host alone."""
    await _trust(runtime, "globex", issuer, tenant_claim="")
    await _trust(runtime, "acme", issuer)
    ana = issuer.token(roles=["admin"])  # org=acme
    assert await _whoami(app_client, ana, acme.host) == (200, "acme")
    keys = await app_client.get("/api.ashx/v1/api-keys", headers=_bearer(ana, acme.host))
    assert keys.status_code == 200
    assert await _whoami(app_client, ana, globex.host) == (200, "globex")  # globex's own choice
    foreign = issuer.token(roles=["admin"], org="globex")
    assert (await _whoami(app_client, foreign, acme.host))[0] == 401


async def test_two_tenants_trusting_one_issuer_each_get_their_own_tokens(
    app_client: AsyncClient,
    acme: TenantFixture,
    globex: TenantFixture,
    runtime: Runtime,
    issuer: FakeIssuer,
) -> None:
    """Both trust the issuer, each with its tenant claim: each tenant's tokens work on its own
    host (acme, the lower id, no longer breaks globex's), and on the other's host they are 401."""
    await _trust(runtime, "acme", issuer)
    await _trust(runtime, "globex", issuer)
    of_acme = issuer.token(roles=["admin"])
    of_globex = issuer.token(roles=["admin"], org="globex")
    assert await _whoami(app_client, of_globex, globex.host) == (200, "globex")
    assert await _whoami(app_client, of_acme, acme.host) == (200, "acme")
    assert (await _whoami(app_client, of_globex, acme.host))[0] == 401
    assert (await _whoami(app_client, of_acme, globex.host))[0] == 401
    # the platform API answers an external token on its tenant's host only
    url = "/api.ashx/v1/api-keys"
    assert (await app_client.get(url, headers=_bearer(of_globex, globex.host))).status_code == 200
    refused = await app_client.get(url, headers=_bearer(of_globex, acme.host))
    assert refused.status_code == 401
    assert refused.json()["error"] == "invalid_token"


async def test_a_token_trusted_by_another_tenant_only_is_refused_on_this_host(
    app_client: AsyncClient,
    acme: TenantFixture,
    globex: TenantFixture,
    runtime: Runtime,
    issuer: FakeIssuer,
) -> None:
    await _trust(runtime, "globex", issuer, tenant_claim="")
    token = issuer.token(roles=["admin"])
    url = "/api.ashx/v1/api-keys"
    assert (await app_client.get(url, headers=_bearer(token, globex.host))).status_code == 200
    # the verdict kept for globex's host does not carry over to another host
    for host in (acme.host, "nobody.test"):
        refused = await app_client.get(url, headers=_bearer(token, host))
        assert refused.status_code == 401, host
    # a tenant that stops trusting the issuer refuses its tokens on the next request
    async with runtime.db.transaction() as session:
        row = await tenants.require_by_name(session, "globex")
        await tenants.set_setting(session, row, "ExternalOidc:Issuer", "")
    assert (await app_client.get(url, headers=_bearer(token, globex.host))).status_code == 401
