"""The token endpoint, bearer checks and API keys over HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import re

from httpx import AsyncClient

from switchboard.identity import service as identity
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from tests import factories
from tests.factories import PASSWORD, TenantFixture


async def _grant(client: AsyncClient, host: str, **form: str) -> tuple[int, dict[str, object]]:
    data = {"grant_type": "password", "client_id": "cli", **form}
    response = await client.post("/oidc.ashx/token", data=data, headers={"Host": host})
    assert response.headers["cache-control"] == "no-store"
    return response.status_code, response.json()


async def test_password_grant_returns_access_and_id_token(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    status, body = await _grant(
        app_client, acme.host, username="admin", password=PASSWORD, scope="openid"
    )
    assert status == 200
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert "id_token" in body
    assert "refresh_token" not in body


async def test_offline_access_adds_refresh_token_and_rotation_detects_reuse(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    status, body = await _grant(
        app_client, acme.host, username="admin", password=PASSWORD, scope="openid offline_access"
    )
    assert status == 200
    first = str(body["refresh_token"])

    async def refresh(token: str) -> tuple[int, dict[str, object]]:
        response = await app_client.post(
            "/oidc.ashx/token",
            data={"grant_type": "refresh_token", "client_id": "cli", "refresh_token": token},
            headers={"Host": acme.host},
        )
        return response.status_code, response.json()

    status, rotated = await refresh(first)
    assert status == 200
    second = str(rotated["refresh_token"])
    assert second != first
    # Reusing the rotated token is theft: the whole family is revoked, including `second`.
    status, error = await refresh(first)
    assert (status, error["error"]) == (400, "invalid_grant")
    status, error = await refresh(second)
    assert (status, error["error"]) == (400, "invalid_grant")


async def test_wrong_password_unknown_client_and_grant(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    status, body = await _grant(app_client, acme.host, username="admin", password="nope-nope")
    assert (status, body["error"]) == (400, "invalid_grant")
    status, body = await _grant(
        app_client, acme.host, username="admin", password=PASSWORD, client_id="other"
    )
    assert (status, body["error"]) == (401, "invalid_client")
    response = await app_client.post(
        "/oidc.ashx/token",
        data={"grant_type": "client_credentials", "client_id": "cli"},
        headers={"Host": acme.host},
    )
    assert (response.status_code, response.json()["error"]) == (400, "unsupported_grant_type")
    response = await app_client.post(
        "/oidc.ashx/token", data={"client_id": "cli"}, headers={"Host": acme.host}
    )
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")


async def test_an_error_description_holds_only_the_characters_oauth_allows(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """RFC 6749 §5.2: printable ASCII without the double quote and the backslash, even where
    the description quotes the client's input."""
    response = await app_client.post(
        "/oidc.ashx/token",
        data={"grant_type": 'é"\\x', "client_id": "cli"},
        headers={"Host": acme.host},
    )
    assert (response.status_code, response.json()["error"]) == (400, "unsupported_grant_type")
    description = response.json()["error_description"]
    assert re.fullmatch(r"[\x20-\x21\x23-\x5b\x5d-\x7e]+", description), description
    assert "x" in description  # the rest of the input is still shown


async def test_repeated_wrong_passwords_are_throttled(
    app_client: AsyncClient, acme: TenantFixture, clock: ManualClock
) -> None:
    for _ in range(5):
        status, _body = await _grant(app_client, acme.host, username="admin", password="bad-pass")
        assert status == 400
    # Locked: even the right password is refused until the lock expires.
    status, body = await _grant(app_client, acme.host, username="admin", password=PASSWORD)
    assert status == 429
    assert body["error"] == "invalid_grant"
    clock.advance(301)
    status, _body = await _grant(app_client, acme.host, username="admin", password=PASSWORD)
    assert status == 200


async def test_wrong_passwords_at_once_are_all_counted(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """Concurrent wrong passwords each count: the tally is raised in the database, not read and
    written back, so no guess slips through uncounted (decision 0006)."""
    answers = await asyncio.gather(
        *(_grant(app_client, acme.host, username="admin", password="bad-pass") for _ in range(5))
    )
    assert [status for status, _body in answers] == [400] * 5
    status, body = await _grant(app_client, acme.host, username="admin", password=PASSWORD)
    assert (status, body["error"]) == (429, "invalid_grant")


async def test_tenant_comes_from_host(
    app_client: AsyncClient, acme: TenantFixture, globex: TenantFixture
) -> None:
    token = await globex.token(app_client)
    bearer = {"Authorization": f"Bearer {token}", "Host": globex.host}
    response = await app_client.get("/oidc.ashx/userinfo", headers=bearer)
    assert response.json()["tenant"] == "globex"
    # OpenID Connect Core 5.3.1: the UserInfo endpoint answers POST as well as GET.
    posted = await app_client.post("/oidc.ashx/userinfo", headers=bearer)
    assert (posted.status_code, posted.json()) == (200, response.json())
    status, body = await _grant(app_client, "unknown.test", username="admin", password=PASSWORD)
    assert (status, body["error"]) == (404, "not_found")


async def test_a_refresh_asked_for_less_keeps_the_grants_scope(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """RFC 6749 §6: the access token may be narrower than the grant, the new refresh token's
    scope stays the grant's; and the answer's scope is what was asked for."""
    full = "openid offline_access email"
    status, body = await _grant(
        app_client, acme.host, username="admin", password=PASSWORD, scope=full
    )
    assert status == 200, body

    async def refresh(token: object, scope: str | None) -> dict[str, object]:
        form = {"grant_type": "refresh_token", "client_id": "cli", "refresh_token": str(token)}
        answer = await app_client.post(
            "/oidc.ashx/token", data={**form, **({"scope": scope} if scope else {})},
            headers={"Host": acme.host},
        )  # fmt: skip
        assert answer.status_code == 200, answer.text
        refreshed: dict[str, object] = answer.json()
        return refreshed

    narrow = await refresh(body["refresh_token"], "openid")
    assert narrow["scope"] == "openid"
    assert "refresh_token" in narrow
    wide_again = await refresh(narrow["refresh_token"], full)
    assert wide_again["scope"] == full
    assert (await refresh(wide_again["refresh_token"], None))["scope"] == full


async def test_a_refreshed_id_token_keeps_the_time_of_the_sign_in(
    app_client: AsyncClient, acme: TenantFixture, clock: ManualClock
) -> None:
    """OpenID Connect Core 12.2: a refreshed ID token's ``auth_time`` is the original
    authentication's, not the refresh's (a client checks ``max_age`` by it)."""
    status, body = await _grant(
        app_client, acme.host, username="admin", password=PASSWORD, scope="openid offline_access"
    )
    assert status == 200, body
    signed_in = _unverified(str(body["id_token"]))["auth_time"]
    clock.advance(600)
    answer = await app_client.post(
        "/oidc.ashx/token",
        data={"grant_type": "refresh_token", "client_id": "cli",
              "refresh_token": str(body["refresh_token"])},
        headers={"Host": acme.host},
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    refreshed = _unverified(answer.json()["id_token"])
    assert refreshed["auth_time"] == signed_in
    assert refreshed["iat"] >= signed_in + 600


def _unverified(token: str) -> dict[str, int]:
    """The claims of a JWT, unchecked (its signature is not what this test is about)."""
    payload = token.split(".")[1]
    claims: dict[str, int] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return claims


async def test_userinfo_answers_by_the_tokens_scopes(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    """OpenID Connect Core 5.3.1 and 5.4: an access token issued without ``openid`` is no
    token for UserInfo (403, as Keycloak answers); with ``email`` the address and whether it
    is verified come too, without it they do not."""
    async with runtime.db.transaction() as session:
        await identity.set_email(
            session, tenant_id=acme.id, username="admin", email="ops@acme.test", verified=True
        )

    async def info(scope: str) -> tuple[int, dict[str, object]]:
        status, body = await _grant(
            app_client, acme.host, username="admin", password=PASSWORD, scope=scope
        )
        assert status == 200, body
        answer = await app_client.get(
            "/oidc.ashx/userinfo",
            headers={"Authorization": f"Bearer {body['access_token']}", "Host": acme.host},
        )
        return answer.status_code, answer.json()

    status, body = await info("offline_access")
    assert (status, body["error"]) == (403, "insufficient_scope")
    status, body = await info("openid")
    assert status == 200
    assert "email" not in body
    status, body = await info("openid email")
    assert (body["email"], body["email_verified"]) == ("ops@acme.test", True)


async def test_userinfo_answers_for_the_hosts_tenant_only(
    app_client: AsyncClient, acme: TenantFixture, globex: TenantFixture
) -> None:
    """A token of another tenant is 401 on this host, as an invalid one; on a host no tenant
    serves, userinfo is 404 like the identity provider's other endpoints."""
    token = await globex.token(app_client)
    for method in ("GET", "POST"):
        for host, expected in ((acme.host, 401), ("unknown.test", 404)):
            response = await app_client.request(
                method,
                "/oidc.ashx/userinfo",
                headers={"Authorization": f"Bearer {token}", "Host": host},
            )
            assert response.status_code == expected, (method, host)
            assert response.json()["error"] == ("invalid_token" if expected == 401 else "not_found")
            assert "globex" not in response.text
        refused = await app_client.request(
            method, "/oidc.ashx/userinfo", headers={"Host": acme.host}
        )
        assert refused.status_code == 401


async def test_discovery_and_jwks(app_client: AsyncClient, acme: TenantFixture) -> None:
    response = await app_client.get("/oidc.ashx/.well-known/openid-configuration")
    assert response.status_code == 200
    doc = response.json()
    assert doc["issuer"] == "http://acme.test/oidc.ashx"
    assert doc["token_endpoint"] == "http://acme.test/oidc.ashx/token"
    jwks = (await app_client.get("/oidc.ashx/jwks")).json()
    assert jwks["keys"]
    assert all("d" not in key for key in jwks["keys"])


async def test_bearer_rules(app_client: AsyncClient, acme: TenantFixture, runtime: Runtime) -> None:
    url = "/api.ashx/v1/api-keys"
    missing = await app_client.get(url)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert missing.json()["error"] == "invalid_token"
    garbage = await app_client.get(url, headers={"Authorization": "Bearer not.a.jwt"})
    assert garbage.status_code == 401
    # RFC 6750 (3.1): a presented token that fails is named; a role it lacks too.
    assert garbage.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    user = await app_client.get(url, headers=await acme.auth(app_client, "user"))
    assert (user.status_code, user.json()["error"]) == (403, "insufficient_scope")
    assert user.headers["www-authenticate"] == 'Bearer error="insufficient_scope"'
    power = await app_client.get(url, headers=await acme.auth(app_client, "power"))
    assert power.status_code == 403
    admin = await app_client.get(url, headers=await acme.auth(app_client))
    assert admin.status_code == 200


async def test_expired_token_is_401(
    app_client: AsyncClient, acme: TenantFixture, clock: ManualClock
) -> None:
    headers = await acme.auth(app_client)
    assert (await app_client.get("/api.ashx/v1/api-keys", headers=headers)).status_code == 200
    clock.advance(3601)
    response = await app_client.get("/api.ashx/v1/api-keys", headers=headers)
    assert response.status_code == 401


async def test_api_keys_mint_use_revoke(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    headers = await acme.auth(app_client)
    created = await app_client.post("/api.ashx/v1/api-keys", json={"name": "ci"}, headers=headers)
    assert created.status_code == 201
    key = created.json()["key"]
    assert key.startswith("ak_")
    assert len(key) >= 3 + 22
    key_headers = {"Authorization": f"Bearer {key}"}
    listed = await app_client.get("/api.ashx/v1/api-keys", headers=key_headers)
    assert listed.status_code == 200
    assert all("key" not in item for item in listed.json()["data"])
    used = [item for item in listed.json()["data"] if item["id"] == created.json()["id"]]
    assert used[0]["lastUsedUtc"] is None  # recorded after the request that used it
    again = await app_client.get("/api.ashx/v1/api-keys", headers=headers)
    used = [item for item in again.json()["data"] if item["id"] == created.json()["id"]]
    assert used[0]["lastUsedUtc"] == "2026-01-01T12:00:00Z"
    # An API key cannot mint another key.
    refused = await app_client.post("/api.ashx/v1/api-keys", json={}, headers=key_headers)
    assert (refused.status_code, refused.json()["error"]) == (403, "api_key_cannot_mint")
    # A refused first use is a use too: it is recorded although the request was rolled back.
    fresh = await factories.api_key(runtime, acme)
    first = await app_client.post(
        "/api.ashx/v1/api-keys", json={}, headers={"Authorization": f"Bearer {fresh}"}
    )
    assert first.status_code == 403
    listed = (await app_client.get("/api.ashx/v1/api-keys", headers=headers)).json()["data"]
    assert [k["lastUsedUtc"] for k in listed if fresh.startswith(k["prefix"])] == [
        "2026-01-01T12:00:00Z"
    ]
    bodiless = await app_client.post("/api.ashx/v1/api-keys", headers=key_headers)
    assert (bodiless.status_code, bodiless.json()["error"]) == (403, "api_key_cannot_mint")
    other = await factories.api_key(runtime, acme)
    revoked = await app_client.delete(
        f"/api.ashx/v1/api-keys/{created.json()['id']}", headers=headers
    )
    assert revoked.status_code == 200
    assert revoked.json()["revokedAtUtc"] is not None
    gone = await app_client.get("/api.ashx/v1/api-keys", headers=key_headers)
    assert gone.status_code == 401
    still = await app_client.get(
        "/api.ashx/v1/api-keys", headers={"Authorization": f"Bearer {other}"}
    )
    assert still.status_code == 200


async def test_key_rotation_keeps_live_tokens_valid(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    headers = await acme.auth(app_client)
    runtime.authenticator.forget_cached_tokens()
    async with runtime.db.transaction() as session:
        old = (await runtime.keyring.ensure_signer(session))[0]
        new = await runtime.keyring.rotate(session)
    assert new != old
    assert (await app_client.get("/api.ashx/v1/api-keys", headers=headers)).status_code == 200
    fresh = await acme.auth(app_client)
    assert (await app_client.get("/api.ashx/v1/api-keys", headers=fresh)).status_code == 200
    kids = {k["kid"] for k in (await app_client.get("/oidc.ashx/jwks")).json()["keys"]}
    assert {old, new} <= kids
    async with runtime.db.transaction() as session:
        await runtime.keyring.retire(session, old)
    runtime.authenticator.forget_cached_tokens()
    assert (await app_client.get("/api.ashx/v1/api-keys", headers=headers)).status_code == 401
