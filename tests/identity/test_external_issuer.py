"""A tenant trusting an external OIDC issuer: tokens checked against its JWKS over HTTP.

The fake issuers listen on loopback, which the operator opens to issuers here
(``SWITCHBOARD_ISSUER_ALLOW_PRIVATE``); a test parametrized with ``issuer_allow`` runs without.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from httpx import AsyncClient
from joserfc import jwt
from joserfc.jwk import RSAKey
from sqlalchemy.pool import QueuePool

from switchboard.auth.external import UNAVAILABLE, UNTRUSTED
from switchboard.kit.clock import ManualClock
from switchboard.kit.errors import BadRequest
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants
from tests.aioserve import serving
from tests.factories import TenantFixture
from tests.ports import free_port

ISSUER = "https://login.example.com/realms/acme"


@pytest.fixture
def issuer_allow() -> tuple[str, ...]:
    return ("127.0.0.0/8",)


@pytest.fixture
def settings(settings: Settings, issuer_allow: tuple[str, ...]) -> Settings:
    return settings.model_copy(update={"issuer_allow_private": issuer_allow})


@dataclass
class FakeIssuer:
    key: RSAKey
    url: str
    clock: ManualClock
    fetches: list[str] = field(default_factory=list)
    # what its JWKS endpoint serves: these public keys, or, when set, this failure
    published: list[RSAKey] = field(default_factory=list)
    failure: tuple[int, str] | None = None

    def now(self) -> int:
        return int(self.clock.now().timestamp())

    def token(self, key: RSAKey | None = None, **claims: object) -> str:
        """A token of the issuer, signed with its key or ``key`` (whose kid it names)."""
        now = self.now()
        body = {"iss": ISSUER, "sub": "ext-1", "iat": now, "exp": now + 300, "org": "acme"}
        body.update(claims)
        signer = key or self.key
        return jwt.encode({"alg": "RS256", "kid": signer.kid}, body, signer)


@pytest.fixture
async def issuer(clock: ManualClock) -> AsyncIterator[FakeIssuer]:
    key = RSAKey.generate_key(2048, parameters={"kid": "ext", "alg": "RS256"}, private=True)
    fake = FakeIssuer(key=key, url="", clock=clock, published=[key])

    async def jwks(request: web.Request) -> web.Response:
        fake.fetches.append(request.path)
        if fake.failure is not None:
            status, body = fake.failure
            return web.Response(status=status, text=body)
        return web.json_response({"keys": [k.as_dict(private=False) for k in fake.published]})

    app = web.Application()
    app.router.add_get("/jwks", jwks)
    async with serving(app) as base:
        fake.url = f"{base}/jwks"
        yield fake


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
    # first on an endpoint that opens its own transactions (AdminCallerReading)
    assert (await app_client.get("/api.ashx/v1/calls", headers=bearer(admin))).status_code == 200
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


@dataclass
class SlowJwks:
    """A JWKS endpoint that answers only once released: ``asked`` is set when a fetch arrives."""

    url: str = ""
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    fetches: int = 0


@pytest.fixture
async def slow_jwks() -> AsyncIterator[SlowJwks]:
    slow = SlowJwks()
    stranger = RSAKey.generate_key(2048, parameters={"kid": "other"}, private=True)

    async def jwks(_request: web.Request) -> web.Response:
        slow.fetches += 1
        slow.asked.set()
        await slow.release.wait()
        return web.json_response({"keys": [stranger.as_dict(private=False)]})

    app = web.Application()
    app.router.add_get("/jwks", jwks)
    async with serving(app) as base:
        slow.url = f"{base}/jwks"
        yield slow
        slow.release.set()


async def test_a_slow_jwks_holds_no_transaction_and_no_other_tenants_write(
    app_client: AsyncClient,
    acme: TenantFixture,
    globex: TenantFixture,
    runtime: Runtime,
    issuer: FakeIssuer,
    slow_jwks: SlowJwks,
    clock: ManualClock,
) -> None:
    """A forged token naming acme's issuer, whose JWKS answers slowly, is checked without a
    transaction open while the keys are fetched: another tenant's write (a password grant)
    completes meanwhile, and no database connection is held for the waiting request. So on an
    endpoint that names its caller first (minting a key) and on one that names its session first
    (the whitelist)."""
    issuer.url = slow_jwks.url
    await _trust(runtime, "acme", issuer)
    forged = issuer.token(roles=["admin"])  # signed by a key the slow JWKS does not hold
    for number, (path, body) in enumerate(
        (
            ("/api.ashx/v1/api-keys", {"name": "x"}),
            ("/signal.ashx?whitelist=add", {"number": "+1"}),
        ),
        start=1,
    ):
        clock.advance(11)  # a fetch is allowed again
        slow_jwks.asked.clear()
        slow_jwks.release.clear()
        pending = asyncio.create_task(app_client.post(path, json=body, headers=_bearer(forged)))
        await asyncio.wait_for(slow_jwks.asked.wait(), timeout=30)
        pool = runtime.db.engine.pool
        assert isinstance(pool, QueuePool)
        assert pool.checkedout() == 0, path
        assert await asyncio.wait_for(globex.token(app_client), timeout=30)
        assert not pending.done(), path  # the other tenant's write did not wait for the fetch
        slow_jwks.release.set()
        refused = await pending
        assert (refused.status_code, refused.json()["error"]) == (401, "invalid_token"), path
        assert slow_jwks.fetches == number


def _key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256"}, private=True)


async def test_refetches_of_a_jwks_are_limited_per_url(
    app_client: AsyncClient,
    acme: TenantFixture,
    runtime: Runtime,
    issuer: FakeIssuer,
    clock: ManualClock,
) -> None:
    """Tokens naming a key the kept JWKS lacks fetch it again at most once every 10 seconds,
    however many arrive; a key the issuer rotated to is found by the next such fetch."""
    await _trust(runtime, "acme", issuer)
    url = "/api.ashx/v1/api-keys"
    assert (
        await app_client.get(url, headers=_bearer(issuer.token(roles="admin")))
    ).status_code == 200
    assert len(issuer.fetches) == 1
    for kid in ("forged-1", "forged-2", "ext"):  # unknown kids, and a forged key of a known one
        forged = issuer.token(_key(kid), roles="admin")
        assert (await app_client.get(url, headers=_bearer(forged))).status_code == 401
    assert len(issuer.fetches) == 1  # within 10 s of the last fetch: none
    clock.advance(11)
    for kid in ("forged-3", "forged-4"):
        forged = issuer.token(_key(kid), roles="admin")
        assert (await app_client.get(url, headers=_bearer(forged))).status_code == 401
    assert len(issuer.fetches) == 2  # one refetch for both
    rotated = _key("ext-2")
    issuer.published = [issuer.key, rotated]
    fresh = issuer.token(rotated, roles="admin")
    assert (await app_client.get(url, headers=_bearer(fresh))).status_code == 401
    clock.advance(11)
    assert (await app_client.get(url, headers=_bearer(fresh))).status_code == 200
    assert len(issuer.fetches) == 3


async def test_a_failed_fetch_is_remembered_and_answered_401(
    app_client: AsyncClient,
    acme: TenantFixture,
    runtime: Runtime,
    issuer: FakeIssuer,
    clock: ManualClock,
) -> None:
    await _trust(runtime, "acme", issuer)
    issuer.failure = (500, "upstream trouble")
    url = "/api.ashx/v1/api-keys"
    token = issuer.token(roles="admin")
    for _ in range(3):
        refused = await app_client.post(url, json={"name": "k"}, headers=_bearer(token))
        assert refused.status_code == 401
        assert refused.json()["error"] == "invalid_token"
    assert len(issuer.fetches) == 1  # the failure is remembered for 10 s
    issuer.failure = None
    clock.advance(11)
    assert (await app_client.get(url, headers=_bearer(token))).status_code == 200
    assert len(issuer.fetches) == 2


async def _set_jwks_url(runtime: Runtime, url: str) -> None:
    async with runtime.db.transaction() as session:
        row = await tenants.require_by_name(session, "acme")
        await tenants.set_setting(session, row, "ExternalOidc:JwksUrl", url)


async def _store_jwks_url(runtime: Runtime, url: str) -> None:
    """The setting as a value stored before the settings' rules refused it would be."""
    async with runtime.db.transaction() as session:
        row = await tenants.require_by_name(session, "acme")
        row.settings = {**(row.settings or {}), "ExternalOidc:JwksUrl": url}


@pytest.mark.parametrize("issuer_allow", [()])
async def test_a_jwks_at_a_private_address_is_never_fetched(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, issuer: FakeIssuer
) -> None:
    """Without the operator's allowance, loopback, private, link-local and metadata addresses
    are refused, whether named by an IP or by a name that resolves to one (checked on the
    addresses the connection would use)."""
    await _trust(runtime, "acme", issuer)
    token = issuer.token(roles="admin")
    port = issuer.url.split(":")[2].split("/")[0]
    for url in (
        issuer.url,  # http://127.0.0.1:<port>/jwks
        f"http://localhost:{port}/jwks",
        f"http://[::ffff:127.0.0.1]:{port}/jwks",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/jwks",
    ):
        why = UNAVAILABLE
        try:
            await _set_jwks_url(runtime, url)
        except BadRequest:  # the settings take https, or http on loopback (tenants/config.py)
            await _store_jwks_url(runtime, url)  # as stored before that rule
            why = UNTRUSTED  # a broken trust setting is no trust (decision 0017)
        refused = await app_client.get("/api.ashx/v1/api-keys", headers=_bearer(token))
        assert refused.status_code == 401, url
        assert refused.json() == {"error": "invalid_token", "error_description": why}, url
    assert issuer.fetches == []


async def test_what_an_unusable_jwks_answered_is_never_told(
    app_client: AsyncClient,
    acme: TenantFixture,
    runtime: Runtime,
    issuer: FakeIssuer,
    clock: ManualClock,
) -> None:
    """A refused connection, a status other than 200 (a redirect too: none is followed), a
    body that is not JSON or not a JWK Set: each is the same 401, naming none of it."""
    await _trust(runtime, "acme", issuer)
    token = issuer.token(roles="admin")
    answers: list[tuple[int, str] | None] = [
        None,  # the JWKS URL on a port nobody listens on
        (500, "banner of the internal service"),
        (302, "banner of the internal service"),
        (200, "<html>banner of the internal service</html>"),
        (200, '{"banner": "of the internal service"}'),
    ]
    for answer in answers:
        clock.advance(11)  # the last failure is no longer remembered
        if answer is None:
            await _set_jwks_url(runtime, f"http://127.0.0.1:{free_port()}/jwks")
        else:
            await _set_jwks_url(runtime, issuer.url)
            issuer.failure = answer
        refused = await app_client.get("/api.ashx/v1/api-keys", headers=_bearer(token))
        assert refused.status_code == 401, answer
        assert refused.json() == {"error": "invalid_token", "error_description": UNAVAILABLE}
    assert len(issuer.fetches) == 4
    issuer.failure = None
    clock.advance(11)
    assert (
        await app_client.get("/api.ashx/v1/api-keys", headers=_bearer(token))
    ).status_code == 200


async def _store_raw(runtime: Runtime, tenant: str, key: str, value: str) -> None:
    """``key`` stored as ``value`` without its rule: as a value kept from before the rule, or
    written to the database by hand (decision 0017)."""
    async with runtime.db.transaction() as session:
        row = await tenants.require_by_name(session, tenant)
        row.settings = {**(row.settings or {}), key: value}


@pytest.mark.parametrize(
    ("key", "broken"),
    [
        ("ExternalOidc:TenantClaim", "org\tid"),
        ("ExternalOidc:TenantClaim", "o" * 256),
        ("ExternalOidc:RoleClaim", "roles\x7f"),
    ],
)
async def test_a_stored_trust_setting_that_breaks_its_rule_trusts_no_token(
    app_client: AsyncClient,
    acme: TenantFixture,
    runtime: Runtime,
    issuer: FakeIssuer,
    key: str,
    broken: str,
) -> None:
    """A broken tenant or role claim is not read as its default (no tenant check, the ``role``
    claim): the tenant then trusts the issuer's tokens of no tenant, as with a broken issuer."""
    await _trust(runtime, "acme", issuer)
    own = issuer.token(roles=["admin"], role="admin")
    assert await _whoami(app_client, own, acme.host) == (200, "acme")
    await _store_raw(runtime, "acme", key, broken)
    foreign = issuer.token(roles=["admin"], role="admin", org="globex")
    for token in (own, foreign):
        assert (await _whoami(app_client, token, acme.host))[0] == 401
