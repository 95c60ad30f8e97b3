"""Token revocation (RFC 7009) at ``POST /oidc.ashx/revoke``, through HTTP: a client ends a
grant it holds by its refresh token or by an access token that came with one (decision 0034)."""

from __future__ import annotations

from httpx import AsyncClient, Response
from joserfc import jwt
from joserfc.jwk import RSAKey

from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.identity.oauth_helpers import (
    ISSUER,
    Form,
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

REVOKE = "/oidc.ashx/revoke"


async def _revoke(client: AsyncClient, host: str, form: Form, **headers: str) -> Response:
    return await post_form(client, REVOKE, host, form, **headers)


def _cli(token: str, **more: str) -> dict[str, str]:
    """A revocation of ``token`` by the public client ``cli``."""
    return {"client_id": "cli", "token": token, **more}


def _revoked(answer: Response) -> None:
    """RFC 7009 §2.2: 200 and no body, whether or not anything was revoked."""
    assert (answer.status_code, answer.content) == (200, b""), answer.text


async def _userinfo(client: AsyncClient, tenant: TenantFixture, access_token: str) -> int:
    headers = {"Authorization": f"Bearer {access_token}", "Host": tenant.host}
    return (await client.get("/oidc.ashx/userinfo", headers=headers)).status_code


async def test_a_revoked_refresh_token_ends_its_family(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    first = await password_grant(app_client, acme)
    status, rotated = await refresh(app_client, acme, first["refresh_token"])
    assert status == 200, rotated
    assert await _userinfo(app_client, acme, rotated["access_token"]) == 200  # cached verified
    # The first, already rotated token names the grant: its later token ends with it.
    _revoked(await _revoke(app_client, acme.host, _cli(first["refresh_token"])))
    for token in (rotated["refresh_token"], first["refresh_token"]):
        status, error = await refresh(app_client, acme, token)
        assert (status, error["error"]) == (400, "invalid_grant")
    # So do the grant's access tokens, on their next use (the family is looked up each time).
    for access_token in (first["access_token"], rotated["access_token"]):
        assert await _userinfo(app_client, acme, access_token) == 401
    # Revoking again, with the hint, is no error either.
    hinted = _cli(rotated["refresh_token"], token_type_hint="refresh_token")
    _revoked(await _revoke(app_client, acme.host, hinted))
    # Another grant of the same user and client is untouched.
    other = await password_grant(app_client, acme)
    assert (await refresh(app_client, acme, other["refresh_token"]))[0] == 200
    assert await _userinfo(app_client, acme, other["access_token"]) == 200


async def test_an_access_token_revokes_its_grant(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    tokens = await password_grant(app_client, acme)
    assert await _userinfo(app_client, acme, tokens["access_token"]) == 200
    form = _cli(tokens["access_token"], token_type_hint="access_token")
    _revoked(await _revoke(app_client, acme.host, form))
    assert await _userinfo(app_client, acme, tokens["access_token"]) == 401
    status, error = await refresh(app_client, acme, tokens["refresh_token"])
    assert (status, error["error"]) == (400, "invalid_grant")
    # The hint is only a hint: an access token under the refresh token's hint is found too.
    again = await password_grant(app_client, acme)
    hinted = _cli(again["access_token"], token_type_hint="refresh_token")
    _revoked(await _revoke(app_client, acme.host, hinted))
    assert await _userinfo(app_client, acme, again["access_token"]) == 401


async def test_an_access_token_without_a_refresh_token_stays_valid(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """It names no grant the server keeps: 200 and no effect, until it expires (0034)."""
    tokens = await password_grant(app_client, acme, scope="openid")
    assert "refresh_token" not in tokens
    _revoked(await _revoke(app_client, acme.host, _cli(tokens["access_token"])))
    assert await _userinfo(app_client, acme, tokens["access_token"]) == 200


async def test_a_reused_refresh_token_ends_the_access_tokens_of_its_grant(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """Theft detection revokes the family, and with it the access tokens that came with it."""
    first = await password_grant(app_client, acme)
    status, rotated = await refresh(app_client, acme, first["refresh_token"])
    assert status == 200
    assert await _userinfo(app_client, acme, rotated["access_token"]) == 200
    assert (await refresh(app_client, acme, first["refresh_token"]))[0] == 400
    assert await _userinfo(app_client, acme, rotated["access_token"]) == 401


async def test_another_clients_token_is_left_alone(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    secret = await confidential_client(runtime, acme, "crm")
    tokens = await password_grant(app_client, acme)  # issued to cli
    for token in (tokens["refresh_token"], tokens["access_token"]):
        form = {"client_id": "crm", "client_secret": secret, "token": token}
        _revoked(await _revoke(app_client, acme.host, form))
    assert await _userinfo(app_client, acme, tokens["access_token"]) == 200
    status, refreshed = await refresh(app_client, acme, tokens["refresh_token"])
    assert status == 200, refreshed


async def test_another_tenants_token_is_left_alone(
    app_client: AsyncClient, acme: TenantFixture, globex: TenantFixture
) -> None:
    """Both tenants have a client ``cli``: the Host's tenant's is the one asking."""
    tokens = await password_grant(app_client, globex)
    for token in (tokens["refresh_token"], tokens["access_token"]):
        _revoked(await _revoke(app_client, acme.host, _cli(token)))
    assert await _userinfo(app_client, globex, tokens["access_token"]) == 200
    assert (await refresh(app_client, globex, tokens["refresh_token"]))[0] == 200


async def test_unknown_invalid_and_expired_tokens_answer_200_and_change_nothing(
    app_client: AsyncClient, acme: TenantFixture, clock: ManualClock
) -> None:
    tokens = await password_grant(app_client, acme)
    # Our key's kid and the token's claims, signed by another key.
    header = jwt_part(tokens["access_token"], 0)
    forged = jwt.encode(header, jwt_part(tokens["access_token"], 1), RSAKey.generate_key(2048))
    for token in ("rt_unknown", "x", "a.b.c", "é", tokens["id_token"], forged):
        _revoked(await _revoke(app_client, acme.host, _cli(token)))
    clock.advance(3601)  # the access token has expired, its refresh token has not
    _revoked(await _revoke(app_client, acme.host, _cli(tokens["access_token"])))
    status, refreshed = await refresh(app_client, acme, tokens["refresh_token"])
    assert status == 200, refreshed


async def test_refusals(app_client: AsyncClient, runtime: Runtime, acme: TenantFixture) -> None:
    tokens = await password_grant(app_client, acme)
    token = tokens["refresh_token"]
    cases: Refusals = [
        ({"client_id": "cli"}, {}, 400, "invalid_request"),
        ({"client_id": "cli", "token": ""}, {}, 400, "invalid_request"),
        ({"token": token}, {}, 400, "invalid_request"),
        ([("client_id", "cli"), ("token", token), ("token", "rt_x")], {}, 400, "invalid_request"),
        ({"client_id": "cli", "token": "a\x00b"}, {}, 400, "invalid_request"),
        ({"client_id": "cli", "token": token, "token_type_hint": "id_token"}, {}, 400,
         "unsupported_token_type"),
        ({"client_id": "nobody", "token": token}, {}, 401, "invalid_client"),
        ({"client_id": "cli", "client_secret": "cs_guess", "token": token}, {}, 401,
         "invalid_client"),
    ]  # fmt: skip
    secret = await confidential_client(runtime, acme, "crm")
    cases += [
        ({"client_id": "crm", "token": token}, {}, 401, "invalid_client"),
        ({"token": token}, {"Authorization": basic("crm", "cs_wrong")}, 401, "invalid_client"),
        ({"client_secret": secret, "token": token}, {"Authorization": basic("crm", secret)}, 400,
         "invalid_request"),
    ]  # fmt: skip
    await assert_refused(app_client, REVOKE, acme, cases, valid=_cli(token))
    # Nothing above revoked the token.
    status, refreshed = await refresh(app_client, acme, token)
    assert status == 200, refreshed


async def test_a_confidential_client_revokes_with_its_secret(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    secret = await confidential_client(runtime, acme, "crm")
    by_basic = await password_grant(app_client, acme, client_id="crm", secret=secret)
    answer = await _revoke(
        app_client, acme.host, {"token": by_basic["refresh_token"]},
        Authorization=basic("crm", secret),
    )  # fmt: skip
    _revoked(answer)
    by_form = await password_grant(app_client, acme, client_id="crm", secret=secret)
    form = {"client_id": "crm", "client_secret": secret, "token": by_form["access_token"]}
    _revoked(await _revoke(app_client, acme.host, form))
    for tokens in (by_basic, by_form):
        status, error = await refresh(
            app_client, acme, tokens["refresh_token"], client_id="crm", secret=secret
        )
        assert (status, error["error"]) == (400, "invalid_grant")
        assert await _userinfo(app_client, acme, tokens["access_token"]) == 401


async def test_discovery_and_openapi_list_the_endpoint(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    for config in await provider_metadata(app_client, acme):
        assert config["revocation_endpoint"] == f"{ISSUER}/revoke"
        assert config["revocation_endpoint_auth_methods_supported"] == [
            "none", "client_secret_basic", "client_secret_post",
        ]  # fmt: skip
    _, operation, body = await form_operation(app_client, REVOKE, ["200", "400", "401", "404"])
    assert operation["responses"]["200"].get("content", {}) == {}
    assert body["properties"]["token_type_hint"]["enum"] == ["refresh_token", "access_token"]
