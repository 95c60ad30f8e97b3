"""Token revocation (RFC 7009) at ``POST /oidc.ashx/revoke``, through HTTP: a client ends a
grant it holds by its refresh token or by an access token that came with one (decision 0034)."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlencode

import orjson
from httpx import AsyncClient, Response
from joserfc import jwt
from joserfc.jwk import RSAKey

from switchboard.identity import clients
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.tenants import repository as tenants_repo
from tests.conftest import PRIMARY_HOST
from tests.factories import PASSWORD, TenantFixture

REVOKE = "/oidc.ashx/revoke"
GRANT = "openid offline_access"
Form = dict[str, str] | list[tuple[str, str]]


def _client_form(client_id: str, secret: str | None) -> dict[str, str]:
    return {"client_id": client_id, **({"client_secret": secret} if secret else {})}


async def _grant(
    client: AsyncClient,
    tenant: TenantFixture,
    *,
    client_id: str = "cli",
    secret: str | None = None,
    scope: str = GRANT,
) -> dict[str, Any]:
    form = {"grant_type": "password", "username": "admin", "password": PASSWORD, "scope": scope}
    form |= _client_form(client_id, secret)
    answer = await client.post("/oidc.ashx/token", data=form, headers={"Host": tenant.host})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def _refresh(
    client: AsyncClient,
    tenant: TenantFixture,
    token: str,
    *,
    client_id: str = "cli",
    secret: str | None = None,
) -> tuple[int, dict[str, Any]]:
    form = {"grant_type": "refresh_token", "refresh_token": token}
    form |= _client_form(client_id, secret)
    answer = await client.post("/oidc.ashx/token", data=form, headers={"Host": tenant.host})
    body: dict[str, Any] = answer.json()
    return answer.status_code, body


async def _revoke(client: AsyncClient, host: str, form: Form, **headers: str) -> Response:
    answer = await client.post(
        REVOKE,
        content=urlencode(form),
        headers={"Host": host, "Content-Type": "application/x-www-form-urlencoded", **headers},
    )
    assert answer.headers["cache-control"] == "no-store"
    return answer


def _cli(token: str, **more: str) -> dict[str, str]:
    """A revocation of ``token`` by the public client ``cli``."""
    return {"client_id": "cli", "token": token, **more}


def _revoked(answer: Response) -> None:
    """RFC 7009 §2.2: 200 and no body, whether or not anything was revoked."""
    assert (answer.status_code, answer.content) == (200, b""), answer.text


async def _userinfo(client: AsyncClient, tenant: TenantFixture, access_token: str) -> int:
    headers = {"Authorization": f"Bearer {access_token}", "Host": tenant.host}
    return (await client.get("/oidc.ashx/userinfo", headers=headers)).status_code


async def _confidential_client(runtime: Runtime, tenant: TenantFixture, client_id: str) -> str:
    """A new confidential client of ``tenant``; its secret."""
    async with runtime.db.transaction() as session:
        row = await tenants_repo.get_by_id(session, tenant.id)
        assert row is not None
        made = await clients.create_client(
            session, tenant=row, client_id=client_id, clock=runtime.clock
        )
        return clients.new_secret(made)


def _part(token: str, index: int) -> dict[str, Any]:
    """A JWT's header (0) or claims (1), unchecked."""
    part: dict[str, Any] = orjson.loads(base64.urlsafe_b64decode(token.split(".")[index] + "=="))
    return part


async def test_a_revoked_refresh_token_ends_its_family(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    first = await _grant(app_client, acme)
    status, rotated = await _refresh(app_client, acme, first["refresh_token"])
    assert status == 200, rotated
    assert await _userinfo(app_client, acme, rotated["access_token"]) == 200  # cached verified
    # The first, already rotated token names the grant: its later token ends with it.
    _revoked(await _revoke(app_client, acme.host, _cli(first["refresh_token"])))
    for token in (rotated["refresh_token"], first["refresh_token"]):
        status, error = await _refresh(app_client, acme, token)
        assert (status, error["error"]) == (400, "invalid_grant")
    # So do the grant's access tokens, on their next use (the family is looked up each time).
    for access_token in (first["access_token"], rotated["access_token"]):
        assert await _userinfo(app_client, acme, access_token) == 401
    # Revoking again, with the hint, is no error either.
    hinted = _cli(rotated["refresh_token"], token_type_hint="refresh_token")
    _revoked(await _revoke(app_client, acme.host, hinted))
    # Another grant of the same user and client is untouched.
    other = await _grant(app_client, acme)
    assert (await _refresh(app_client, acme, other["refresh_token"]))[0] == 200
    assert await _userinfo(app_client, acme, other["access_token"]) == 200


async def test_an_access_token_revokes_its_grant(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    tokens = await _grant(app_client, acme)
    assert await _userinfo(app_client, acme, tokens["access_token"]) == 200
    form = _cli(tokens["access_token"], token_type_hint="access_token")
    _revoked(await _revoke(app_client, acme.host, form))
    assert await _userinfo(app_client, acme, tokens["access_token"]) == 401
    status, error = await _refresh(app_client, acme, tokens["refresh_token"])
    assert (status, error["error"]) == (400, "invalid_grant")
    # The hint is only a hint: an access token under the refresh token's hint is found too.
    again = await _grant(app_client, acme)
    hinted = _cli(again["access_token"], token_type_hint="refresh_token")
    _revoked(await _revoke(app_client, acme.host, hinted))
    assert await _userinfo(app_client, acme, again["access_token"]) == 401


async def test_an_access_token_without_a_refresh_token_stays_valid(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """It names no grant the server keeps: 200 and no effect, until it expires (0034)."""
    tokens = await _grant(app_client, acme, scope="openid")
    assert "refresh_token" not in tokens
    _revoked(await _revoke(app_client, acme.host, _cli(tokens["access_token"])))
    assert await _userinfo(app_client, acme, tokens["access_token"]) == 200


async def test_a_reused_refresh_token_ends_the_access_tokens_of_its_grant(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """Theft detection revokes the family, and with it the access tokens that came with it."""
    first = await _grant(app_client, acme)
    status, rotated = await _refresh(app_client, acme, first["refresh_token"])
    assert status == 200
    assert await _userinfo(app_client, acme, rotated["access_token"]) == 200
    assert (await _refresh(app_client, acme, first["refresh_token"]))[0] == 400
    assert await _userinfo(app_client, acme, rotated["access_token"]) == 401


async def test_another_clients_token_is_left_alone(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    secret = await _confidential_client(runtime, acme, "crm")
    tokens = await _grant(app_client, acme)  # issued to cli
    for token in (tokens["refresh_token"], tokens["access_token"]):
        form = {"client_id": "crm", "client_secret": secret, "token": token}
        _revoked(await _revoke(app_client, acme.host, form))
    assert await _userinfo(app_client, acme, tokens["access_token"]) == 200
    status, refreshed = await _refresh(app_client, acme, tokens["refresh_token"])
    assert status == 200, refreshed


async def test_another_tenants_token_is_left_alone(
    app_client: AsyncClient, acme: TenantFixture, globex: TenantFixture
) -> None:
    """Both tenants have a client ``cli``: the Host's tenant's is the one asking."""
    tokens = await _grant(app_client, globex)
    for token in (tokens["refresh_token"], tokens["access_token"]):
        _revoked(await _revoke(app_client, acme.host, _cli(token)))
    assert await _userinfo(app_client, globex, tokens["access_token"]) == 200
    assert (await _refresh(app_client, globex, tokens["refresh_token"]))[0] == 200


async def test_unknown_invalid_and_expired_tokens_answer_200_and_change_nothing(
    app_client: AsyncClient, acme: TenantFixture, clock: ManualClock
) -> None:
    tokens = await _grant(app_client, acme)
    # Our key's kid and the token's claims, signed by another key.
    header = _part(tokens["access_token"], 0)
    forged = jwt.encode(header, _part(tokens["access_token"], 1), RSAKey.generate_key(2048))
    for token in ("rt_unknown", "x", "a.b.c", "é", tokens["id_token"], forged):
        _revoked(await _revoke(app_client, acme.host, _cli(token)))
    clock.advance(3601)  # the access token has expired, its refresh token has not
    _revoked(await _revoke(app_client, acme.host, _cli(tokens["access_token"])))
    status, refreshed = await _refresh(app_client, acme, tokens["refresh_token"])
    assert status == 200, refreshed


async def test_refusals(app_client: AsyncClient, runtime: Runtime, acme: TenantFixture) -> None:
    tokens = await _grant(app_client, acme)
    token = tokens["refresh_token"]
    cases: list[tuple[dict[str, str] | list[tuple[str, str]], dict[str, str], int, str]] = [
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
    secret = await _confidential_client(runtime, acme, "crm")
    basic = base64.b64encode(b"crm:" + secret.encode()).decode()
    wrong = base64.b64encode(b"crm:cs_wrong").decode()
    cases += [
        ({"client_id": "crm", "token": token}, {}, 401, "invalid_client"),
        ({"token": token}, {"Authorization": f"Basic {wrong}"}, 401, "invalid_client"),
        ({"client_secret": secret, "token": token}, {"Authorization": f"Basic {basic}"}, 400,
         "invalid_request"),
    ]  # fmt: skip
    for form, headers, status, error in cases:
        answer = await _revoke(app_client, acme.host, form, **headers)
        assert (answer.status_code, answer.json()["error"]) == (status, error), form
        assert set(answer.json()) == {"error", "error_description"}
        if status == 401:
            assert answer.headers["www-authenticate"] == 'Basic realm="oidc"'
    answer = await _revoke(app_client, "unknown.test", _cli(token))
    assert (answer.status_code, answer.json()["error"]) == (404, "not_found")
    # Nothing above revoked the token.
    status, refreshed = await _refresh(app_client, acme, token)
    assert status == 200, refreshed


async def test_a_confidential_client_revokes_with_its_secret(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    secret = await _confidential_client(runtime, acme, "crm")
    by_basic = await _grant(app_client, acme, client_id="crm", secret=secret)
    basic = base64.b64encode(f"crm:{secret}".encode()).decode()
    answer = await _revoke(
        app_client, acme.host, {"token": by_basic["refresh_token"]},
        Authorization=f"Basic {basic}",
    )  # fmt: skip
    _revoked(answer)
    by_form = await _grant(app_client, acme, client_id="crm", secret=secret)
    form = {"client_id": "crm", "client_secret": secret, "token": by_form["access_token"]}
    _revoked(await _revoke(app_client, acme.host, form))
    for tokens in (by_basic, by_form):
        status, error = await _refresh(
            app_client, acme, tokens["refresh_token"], client_id="crm", secret=secret
        )
        assert (status, error["error"]) == (400, "invalid_grant")
        assert await _userinfo(app_client, acme, tokens["access_token"]) == 401


async def test_discovery_and_openapi_list_the_endpoint(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    issuer = f"http://{PRIMARY_HOST}/oidc.ashx"
    for path in (
        "/oidc.ashx/.well-known/openid-configuration",
        "/.well-known/oauth-authorization-server/oidc.ashx",
    ):
        config = (await app_client.get(path, headers={"Host": acme.host})).json()
        assert config["revocation_endpoint"] == f"{issuer}/revoke", path
        assert config["revocation_endpoint_auth_methods_supported"] == [
            "none", "client_secret_basic", "client_secret_post",
        ]  # fmt: skip
    document = (await app_client.get("/openapi.json")).json()
    operation = document["paths"][REVOKE]["post"]
    assert {"200", "400", "401", "404"} <= set(operation["responses"])
    assert operation["responses"]["200"].get("content", {}) == {}
    form = operation["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    body = document["components"]["schemas"][form["$ref"].rsplit("/", 1)[1]]
    assert body["required"] == ["token"]
    assert body["properties"]["token_type_hint"]["enum"] == ["refresh_token", "access_token"]
