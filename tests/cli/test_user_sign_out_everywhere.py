"""``switchboard user sign-out-everywhere``: the user's web app session is refused on its next
request and their refresh token at the token endpoint; a user or tenant that does not exist is
one line on standard error and exit status 2."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from click.testing import CliRunner, Result
from httpx import ASGITransport, AsyncClient

from switchboard.app import create_app
from switchboard.cli import main
from switchboard.runtime import Runtime
from tests.console.signin import console_clients, sign_in
from tests.factories import PASSWORD, TenantFixture

PAGE = "/app/properties"


@pytest.fixture
async def client(runtime: Runtime, acme: TenantFixture) -> AsyncIterator[AsyncClient]:
    await console_clients(runtime, acme)
    app = create_app(runtime=runtime)
    async with runtime.lifespan():
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url=f"http://{acme.host}") as browser:
            yield browser


async def run(cli: CliRunner, *args: str) -> Result:
    return await asyncio.to_thread(cli.invoke, main, ["user", "sign-out-everywhere", *args])


async def test_sign_out_everywhere_from_the_cli(client: AsyncClient, cli: CliRunner) -> None:
    assert (await sign_in(client, "power", mount="/app")).status_code == 303
    assert (await client.get(PAGE)).status_code == 200
    issued = await client.post(
        "/oidc.ashx/token",
        data={
            "grant_type": "password", "client_id": "cli", "username": "power",
            "password": PASSWORD, "scope": "openid offline_access",
        },
    )  # fmt: skip
    assert issued.status_code == 200, issued.text
    refresh = {"grant_type": "refresh_token", "client_id": "cli"}

    done = await run(cli, "power", "--tenant", "acme")
    assert (done.exit_code, done.output) == (0, "signed out everywhere\tpower\n")

    stale = await client.get(PAGE)
    assert stale.status_code == 303
    assert stale.headers["location"].startswith("/app/login?next=")
    token = issued.json()["refresh_token"]
    refused = await client.post("/oidc.ashx/token", data={**refresh, "refresh_token": token})
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_grant")
    assert (await sign_in(client, "power", mount="/app")).status_code == 303  # same password
    assert (await client.get(PAGE)).status_code == 200


async def test_an_unknown_user_or_tenant_is_one_line_and_exit_2(
    client: AsyncClient, cli: CliRunner
) -> None:
    assert (await sign_in(client, "power", mount="/app")).status_code == 303
    for who, where, message in (
        ("nobody", "acme", "error: no user 'nobody' in this tenant\n"),
        ("power", "nowhere", "error: no tenant named 'nowhere'\n"),
    ):
        refused = await run(cli, who, "--tenant", where)
        assert (refused.exit_code, refused.output) == (2, message)
    assert (await client.get(PAGE)).status_code == 200  # nothing ended
