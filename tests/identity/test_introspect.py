"""Token introspection (RFC 7662) at ``POST /oidc.ashx/introspect``, through HTTP: a confidential
client of the Host's tenant learns whether a token is valid now, as the platform's own bearer
check would take it (decision 0036)."""

from __future__ import annotations

from typing import Any

from httpx import AsyncClient
from joserfc import jwt
from joserfc.jwk import RSAKey
from sqlalchemy import delete

from switchboard.auth.models import OidcClient
from switchboard.identity import accounts
from switchboard.identity import service as identity
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from tests import factories
from tests.factories import TenantFixture
from tests.identity.oauth_helpers import (
    GRANT,
    ISSUER,
    Refusals,
    assert_refused,
    basic,
    confidential_client,
    form_operation,
    jwt_part,
    password_grant,
    post_form,
    provider_metadata,
    refresh,
)

INTROSPECT = "/oidc.ashx/introspect"
INACTIVE = {"active": False}


class Introspector:
    """The resource server ``rs``, a confidential client of one tenant."""

    def __init__(self, client: AsyncClient, tenant: TenantFixture, secret: str) -> None:
        self.client, self.tenant, self.secret = client, tenant, secret

    async def ask(self, token: str, **more: str) -> dict[str, Any]:
        form = {"client_id": "rs", "client_secret": self.secret, "token": token, **more}
        answer = await post_form(self.client, INTROSPECT, self.tenant.host, form)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "application/json"
        body: dict[str, Any] = answer.json()
        return body


async def _introspector(
    client: AsyncClient, runtime: Runtime, tenant: TenantFixture
) -> Introspector:
    return Introspector(client, tenant, await confidential_client(runtime, tenant, "rs"))


async def test_an_active_access_token_and_its_fields(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    rs = await _introspector(app_client, runtime, acme)
    tokens = await password_grant(app_client, acme)
    claims = jwt_part(tokens["access_token"], 1)
    answer = await rs.ask(tokens["access_token"])
    assert answer == {
        "active": True,
        "scope": GRANT,
        "client_id": "cli",
        "username": "admin",
        "token_type": "Bearer",
        "exp": claims["exp"],
        "iat": claims["iat"],
        "nbf": claims["nbf"],
        "sub": claims["sub"],
        "aud": "cli",
        "iss": ISSUER,
        "jti": claims["jti"],
        "tenant": "acme",
        "role": "admin",
    }
    assert answer["exp"] - answer["iat"] == 3600
    # The role in force is the user's current one, as the bearer check takes it.
    async with runtime.db.transaction() as session:
        await identity.set_role(session, tenant_id=acme.id, username="admin", role="user")
    assert (await rs.ask(tokens["access_token"]))["role"] == "user"


async def test_a_revoked_grant_is_inactive(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    rs = await _introspector(app_client, runtime, acme)
    tokens = await password_grant(app_client, acme)
    assert (await rs.ask(tokens["access_token"]))["active"] is True
    assert (await rs.ask(tokens["refresh_token"]))["active"] is True
    form = {"client_id": "cli", "token": tokens["refresh_token"]}
    revoked = await app_client.post("/oidc.ashx/revoke", data=form, headers={"Host": acme.host})
    assert revoked.status_code == 200
    assert await rs.ask(tokens["access_token"]) == INACTIVE
    assert await rs.ask(tokens["refresh_token"]) == INACTIVE


async def test_a_disabled_users_tokens_are_inactive(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, clock: ManualClock
) -> None:
    rs = await _introspector(app_client, runtime, acme)
    # Without a refresh token the access token names no grant: only the user's state ends it.
    alone = await password_grant(app_client, acme, username="power", scope="openid")
    with_grant = await password_grant(app_client, acme, username="power")
    for token in (alone["access_token"], with_grant["access_token"], with_grant["refresh_token"]):
        assert (await rs.ask(token))["active"] is True
    async with runtime.db.transaction() as session:
        await accounts.set_disabled(
            session, tenant_id=acme.id, username="power", disabled=True, clock=clock
        )
    for token in (alone["access_token"], with_grant["access_token"], with_grant["refresh_token"]):
        assert await rs.ask(token) == INACTIVE
    # Enabled again: the access token alone is active again, the revoked grant's are not.
    async with runtime.db.transaction() as session:
        await accounts.set_disabled(
            session, tenant_id=acme.id, username="power", disabled=False, clock=clock
        )
    assert (await rs.ask(alone["access_token"]))["active"] is True
    assert await rs.ask(with_grant["access_token"]) == INACTIVE


async def test_a_deleted_client_ends_its_tokens(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    """An access token's audience, a refresh token's client: no longer registered, inactive."""
    rs = await _introspector(app_client, runtime, acme)
    tokens = await password_grant(app_client, acme)
    async with runtime.db.transaction() as session:
        await session.execute(
            delete(OidcClient).where(OidcClient.tenant_id == acme.id, OidcClient.client_id == "cli")
        )
    assert await rs.ask(tokens["access_token"]) == INACTIVE
    assert await rs.ask(tokens["refresh_token"]) == INACTIVE


async def test_expired_tokens_are_inactive(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, clock: ManualClock
) -> None:
    rs = await _introspector(app_client, runtime, acme)
    tokens = await password_grant(app_client, acme)
    clock.advance(3599)
    assert (await rs.ask(tokens["access_token"]))["active"] is True
    clock.advance(1)  # exp reached
    assert await rs.ask(tokens["access_token"]) == INACTIVE
    assert (await rs.ask(tokens["refresh_token"]))["active"] is True
    clock.advance(runtime.settings.refresh_token_ttl)
    assert await rs.ask(tokens["refresh_token"]) == INACTIVE


async def test_another_tenants_token_is_inactive(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> None:
    """Both tenants have a confidential client ``rs``: the Host's tenant's is the one asking."""
    acme_rs = await _introspector(app_client, runtime, acme)
    globex_rs = await _introspector(app_client, runtime, globex)
    tokens = await password_grant(app_client, globex)
    for token in (tokens["access_token"], tokens["refresh_token"]):
        assert await acme_rs.ask(token) == INACTIVE
        assert (await globex_rs.ask(token))["active"] is True
    # acme's secret does not authenticate globex's rs, nor the reverse.
    form = {"client_id": "rs", "client_secret": acme_rs.secret, "token": tokens["access_token"]}
    answer = await post_form(app_client, INTROSPECT, globex.host, form)
    assert (answer.status_code, answer.json()["error"]) == (401, "invalid_client")


async def test_a_refresh_token_is_active_until_rotated(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    rs = await _introspector(app_client, runtime, acme)
    tokens = await password_grant(app_client, acme)
    answer = await rs.ask(tokens["refresh_token"], token_type_hint="refresh_token")
    sub = jwt_part(tokens["access_token"], 1)["sub"]
    iat = answer.pop("iat")
    assert answer == {
        "active": True,
        "scope": GRANT,
        "client_id": "cli",
        "username": "admin",
        "token_type": "refresh_token",
        "exp": iat + runtime.settings.refresh_token_ttl,
        "sub": sub,
    }
    status, rotated = await refresh(app_client, acme, tokens["refresh_token"])
    assert status == 200, rotated
    assert await rs.ask(tokens["refresh_token"]) == INACTIVE
    assert (await rs.ask(rotated["refresh_token"]))["token_type"] == "refresh_token"
    # The access token of the first refresh is still valid: the grant was rotated, not revoked.
    assert (await rs.ask(tokens["access_token"]))["active"] is True


async def test_anything_else_is_inactive(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    """Unknown, malformed, forged, an ID token, an API key: ``active: false`` and nothing more,
    whatever the hint."""
    rs = await _introspector(app_client, runtime, acme)
    tokens = await password_grant(app_client, acme)
    header = jwt_part(tokens["access_token"], 0)  # our key's kid, signed by another key
    forged = jwt.encode(header, jwt_part(tokens["access_token"], 1), RSAKey.generate_key(2048))
    key = await factories.api_key(runtime, acme)
    for token in ("rt_unknown", "x", "a.b.c", "é", "..", tokens["id_token"], forged, key):
        assert await rs.ask(token) == INACTIVE, token
        assert await rs.ask(token, token_type_hint="access_token") == INACTIVE, token
    assert await rs.ask(tokens["access_token"], token_type_hint="whatever") != INACTIVE


async def test_refusals(app_client: AsyncClient, runtime: Runtime, acme: TenantFixture) -> None:
    token = (await password_grant(app_client, acme))["access_token"]
    secret = await confidential_client(runtime, acme, "rs")
    ok = {"client_id": "rs", "client_secret": secret}
    cases: Refusals = [
        ({"client_id": "cli", "token": token}, {}, 401, "invalid_client"),  # a public client
        ({"client_id": "rs", "token": token}, {}, 401, "invalid_client"),
        ({"client_id": "rs", "client_secret": "cs_guess", "token": token}, {}, 401,
         "invalid_client"),
        ({"token": token}, {"Authorization": basic("rs", "cs_wrong")}, 401, "invalid_client"),
        ({"client_id": "nobody", "client_secret": secret, "token": token}, {}, 401,
         "invalid_client"),
        (ok, {}, 400, "invalid_request"),
        ({**ok, "token": ""}, {}, 400, "invalid_request"),
        ({"token": token}, {}, 400, "invalid_request"),
        ([*ok.items(), ("token", token), ("token", "rt_x")], {}, 400, "invalid_request"),
        ({**ok, "token": "a\x00b"}, {}, 400, "invalid_request"),
        ({"client_secret": secret, "token": token}, {"Authorization": basic("rs", secret)}, 400,
         "invalid_request"),
    ]  # fmt: skip
    await assert_refused(app_client, INTROSPECT, acme, cases, valid={**ok, "token": token})
    # With Basic credentials instead of the form's.
    answer = await post_form(
        app_client, INTROSPECT, acme.host, {"token": token}, Authorization=basic("rs", secret)
    )
    assert (answer.status_code, answer.json()["active"]) == (200, True)


async def test_discovery_and_openapi_list_the_endpoint(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    for config in await provider_metadata(app_client, acme):
        assert config["introspection_endpoint"] == f"{ISSUER}/introspect"
        assert config["introspection_endpoint_auth_methods_supported"] == [
            "client_secret_basic", "client_secret_post",
        ]  # fmt: skip
    document, operation, _ = await form_operation(
        app_client, INTROSPECT, ["200", "400", "401", "404"]
    )
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    schema = document["components"]["schemas"][answer["$ref"].rsplit("/", 1)[1]]
    assert schema["required"] == ["active"]
    assert schema["properties"]["token_type"]["enum"] == ["Bearer", "refresh_token"]
