"""Browser sign-in keeps tenants apart: sessions, codes and clients belong to the Host's tenant."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from httpx import ASGITransport, AsyncClient

from switchboard.app import create_app
from switchboard.runtime import Runtime
from tests.console.signin import console_clients
from tests.factories import PASSWORD, TenantFixture
from tests.identity.signin_helpers import redirect_params, sign_in
from tests.identity.test_signin_errors import VERIFIER, console_authorize_url


@pytest.fixture
async def browser(
    runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> AsyncIterator[AsyncClient]:
    await console_clients(runtime, acme, globex)
    app = create_app(runtime=runtime)
    async with runtime.lifespan(), AsyncClient(transport=ASGITransport(app=app)) as client:
        yield client


async def test_sessions_codes_and_uris_stay_in_their_tenant(
    browser: AsyncClient, acme: TenantFixture, globex: TenantFixture
) -> None:
    answer = await sign_in(browser, console_authorize_url(acme.host))
    code = redirect_params(answer)["code"]
    # acme's session cookie, replayed on globex's host, signs nobody in there.
    cookie = next(c.value for c in browser.cookies.jar if c.name == "sb_idp_session")
    replay = await browser.get(
        console_authorize_url(globex.host, prompt="none"),
        headers={"Cookie": f"sb_idp_session={cookie}"},
    )
    assert redirect_params(replay)["error"] == "login_required"
    # acme's code is unknown at globex's token endpoint (same client id on both tenants).
    exchanged = await browser.post(
        f"http://{globex.host}/oidc.ashx/token",
        data={
            "grant_type": "authorization_code",
            "client_id": "console",
            "code": code,
            "redirect_uri": f"http://{acme.host}/admin/callback",
            "code_verifier": VERIFIER,
        },
    )
    assert (exchanged.status_code, exchanged.json()["error"]) == (400, "invalid_grant")
    # globex's client does not accept acme's redirect URI.
    foreign = await browser.get(
        console_authorize_url(globex.host).replace("globex.test%2Fadmin", "acme.test%2Fadmin")
    )
    assert foreign.status_code == 400
    # globex's own admin (same username, another user) signs in on globex's host.
    globex_login = await sign_in(browser, console_authorize_url(globex.host), password=PASSWORD)
    token = await browser.post(
        f"http://{globex.host}/oidc.ashx/token",
        data={
            "grant_type": "authorization_code",
            "client_id": "console",
            "code": redirect_params(globex_login)["code"],
            "redirect_uri": f"http://{globex.host}/admin/callback",
            "code_verifier": VERIFIER,
        },
    )
    assert token.status_code == 200
    me = await browser.get(
        f"http://{globex.host}/oidc.ashx/userinfo",
        headers={"Authorization": f"Bearer {token.json()['access_token']}"},
    )
    assert me.json()["tenant"] == "globex"
