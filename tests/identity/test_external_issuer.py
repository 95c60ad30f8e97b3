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


async def _trust(runtime: Runtime, tenant: str, issuer: FakeIssuer) -> None:
    async with runtime.db.transaction() as session:
        row = await tenants.require_by_name(session, tenant)
        await tenants.set_setting(session, row, "ExternalOidc:Issuer", ISSUER)
        await tenants.set_setting(session, row, "ExternalOidc:JwksUrl", issuer.url)
        await tenants.set_setting(session, row, "ExternalOidc:TenantClaim", "org")
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
