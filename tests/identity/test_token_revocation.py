"""Our own access tokens are checked against the database on every use: an audience that is no
registered client of the tenant, a subject that is no longer a user, a disabled user and a
changed role all take effect on the next request, on the platform API and the linen portal."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson
from click.testing import CliRunner
from httpx import AsyncClient
from joserfc import jwt

from switchboard.cli import main
from switchboard.runtime import Runtime
from tests import factories
from tests.factories import TenantFixture

PLATFORM = "/api.ashx/v1/api-keys"
PORTAL = "/api/v1/properties"


async def run_cli(cli: CliRunner, *args: str, stdin: str | None = None) -> str:
    result = await asyncio.to_thread(cli.invoke, main, list(args), input=stdin)
    assert result.exit_code == 0, result.output
    return result.output


async def statuses(client: AsyncClient, token: str, host: str = "acme.test") -> tuple[int, int]:
    headers = {"Authorization": f"Bearer {token}", "Host": host}
    platform = await client.get(PLATFORM, headers=headers)
    portal = await client.get(PORTAL, headers=headers)
    return platform.status_code, portal.status_code


async def resign(runtime: Runtime, token: str, **changes: Any) -> str:
    """The token's claims with ``changes``, signed by the identity provider's own key."""
    claims = orjson.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    claims.update(changes)
    async with runtime.db.transaction() as session:
        kid, key = await runtime.keyring.ensure_signer(session)
    return jwt.encode({"alg": "RS256", "kid": kid, "typ": "JWT"}, claims, key)


async def test_an_audience_must_be_a_registered_client_of_the_tenant(
    app_client: AsyncClient,
    acme: TenantFixture,
    globex: TenantFixture,
    runtime: Runtime,
    cli: CliRunner,
) -> None:
    token = await acme.token(app_client)
    assert await statuses(app_client, token) == (200, 200)
    for audience in ("anything", ["anything", "else"], "", None):
        forged = await resign(runtime, token, aud=audience)
        assert await statuses(app_client, forged) == (401, 401), audience
    await run_cli(cli, "client", "create", "globex-only", "--tenant", "globex")
    other_tenants = await resign(runtime, token, aud="globex-only")
    assert await statuses(app_client, other_tenants) == (401, 401)
    # Single sign-on: a sister application registered as a client of the same tenant.
    sister = await resign(runtime, token, aud="sister-app")
    assert await statuses(app_client, sister) == (401, 401)
    await run_cli(cli, "client", "create", "sister-app", "--tenant", "acme")
    assert await statuses(app_client, sister) == (200, 200)


async def test_a_subject_that_is_no_user_is_refused(
    app_client: AsyncClient, acme: TenantFixture, globex: TenantFixture, runtime: Runtime
) -> None:
    token = await acme.token(app_client)
    globex_admin = orjson.loads(
        base64.urlsafe_b64decode((await globex.token(app_client)).split(".")[1] + "==")
    )["sub"]
    for subject in ("999999", "admin", "", globex_admin, "9" * 40):
        forged = await resign(runtime, token, sub=subject)
        assert await statuses(app_client, forged) == (401, 401), subject


async def test_disable_role_change_and_delete_take_effect_on_the_next_request(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, cli: CliRunner
) -> None:
    token = await acme.token(app_client)
    key = await factories.api_key(runtime, acme)
    key_headers = {"Authorization": f"Bearer {key}"}
    assert await statuses(app_client, token) == (200, 200)  # now in the verified-token cache

    assert (await app_client.get(PLATFORM, headers=key_headers)).status_code == 200
    await run_cli(cli, "user", "set-role", "admin", "--tenant", "acme", "--role", "user")
    platform, portal = await statuses(app_client, token)
    assert (platform, portal) == (403, 200)
    # The user's API key acts with the user's authority too: no admin surface any more.
    demoted = await app_client.get(PLATFORM, headers=key_headers)
    assert (demoted.status_code, demoted.json()["error"]) == (403, "insufficient_scope")
    for path in ("/api.ashx/v1/calls", "/api.ashx/v1/tenants"):
        assert (await app_client.get(path, headers=key_headers)).status_code == 403, path
    write = await app_client.post(
        PORTAL, json={}, headers={"Authorization": f"Bearer {token}", "Host": acme.host}
    )
    assert write.status_code == 403
    await run_cli(cli, "user", "set-role", "admin", "--tenant", "acme", "--role", "admin")
    assert await statuses(app_client, token) == (200, 200)
    assert (await app_client.get(PLATFORM, headers=key_headers)).status_code == 200

    await run_cli(cli, "user", "disable", "admin", "--tenant", "acme")
    assert await statuses(app_client, token) == (401, 401)
    assert (await app_client.get(PLATFORM, headers=key_headers)).status_code == 401
    await run_cli(cli, "user", "enable", "admin", "--tenant", "acme")
    assert await statuses(app_client, token) == (200, 200)

    await run_cli(cli, "user", "delete", "admin", "--tenant", "acme")
    assert await statuses(app_client, token) == (401, 401)
    assert (await app_client.get(PLATFORM, headers=key_headers)).status_code == 401
    listing = await app_client.get(PLATFORM, headers=await acme.auth(app_client, "power"))
    assert listing.status_code == 403  # the other users are untouched


async def test_set_password_replaces_the_old_one(
    app_client: AsyncClient, acme: TenantFixture, cli: CliRunner
) -> None:
    await run_cli(
        cli, "user", "set-password", "power", "--tenant", "acme", "--password-stdin",
        stdin="a brand new passphrase\n",
    )  # fmt: skip
    form = {"grant_type": "password", "client_id": "cli", "username": "power"}
    old = await app_client.post("/oidc.ashx/token", data={**form, "password": factories.PASSWORD})
    assert old.status_code == 400
    new = await app_client.post(
        "/oidc.ashx/token", data={**form, "password": "a brand new passphrase"}
    )
    assert new.status_code == 200
    result = await asyncio.to_thread(
        cli.invoke, main, ["user", "disable", "nobody", "--tenant", "acme"]
    )
    assert result.exit_code == 2
    assert "no user 'nobody'" in result.output
