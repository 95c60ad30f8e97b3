"""An off-the-shelf OAuth client (authlib) signs in through the real login page."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import authlib.deprecate  # noqa: F401 (installs its own filter, which ours must follow)
import pytest

# authlib's httpx client runs on httpx2 (locked, a dependency of google-genai), so its transport
# into the ASGI app is httpx2's.
from authlib.integrations.httpx_client import AsyncOAuth2Client
from httpx import ASGITransport, AsyncClient
from httpx2 import ASGITransport as OAuthTransport
from joserfc import jwt
from joserfc.jwk import KeySet
from starlette.applications import Starlette

from switchboard.app import create_app
from switchboard.identity import clients
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.conftest import PRIMARY_HOST
from tests.factories import PASSWORD, TenantFixture
from tests.identity.signin_helpers import parse_form, redirect_params, sign_in

BASE = f"http://{PRIMARY_HOST}"
REDIRECT_URI = f"{BASE}/admin/callback"
ISSUER = f"{BASE}/oidc.ashx"


@pytest.fixture
async def app(runtime: Runtime, acme: TenantFixture) -> AsyncIterator[Starlette]:
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await clients.ensure_console_client(
            session, tenant=tenant, base_url=BASE, clock=runtime.clock
        )
    application = create_app(runtime=runtime)
    async with runtime.lifespan():
        yield application


@pytest.fixture
async def browser(app: Starlette) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(transport=ASGITransport(app=app), base_url=BASE) as client:
        yield client


def oauth_client(app: Starlette, **kwargs: object) -> AsyncOAuth2Client:
    options: dict[str, object] = {
        "client_id": "console",
        "redirect_uri": REDIRECT_URI,
        "scope": "openid offline_access",
        "code_challenge_method": "S256",
        "token_endpoint_auth_method": "none",
        **kwargs,
    }
    return AsyncOAuth2Client(transport=OAuthTransport(app=app), base_url=BASE, **options)


async def test_authlib_signs_in_through_the_login_page(
    app: Starlette, browser: AsyncClient, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with oauth_client(app) as oauth:
        config = (await browser.get(f"{ISSUER}/.well-known/openid-configuration")).json()
        assert config["authorization_endpoint"] == f"{ISSUER}/authorize"
        assert config["end_session_endpoint"] == f"{ISSUER}/end_session"
        assert config["response_types_supported"] == ["code"]
        assert config["code_challenge_methods_supported"] == ["S256"]
        assert "authorization_code" in config["grant_types_supported"]

        verifier = "v" * 20 + "-._~" + "x" * 30
        url, state = oauth.create_authorization_url(
            config["authorization_endpoint"], code_verifier=verifier, nonce="n-0S6_WzA2Mj"
        )
        page = await browser.get(url)
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp
        assert "default-src 'none'" in csp
        assert "'unsafe-inline'" not in csp
        assert "<script" not in page.text
        form = parse_form(page)
        assert set(form.fields) == {"csrf_token", "username", "password"}
        answer = await browser.post(
            form.url, data={**form.fields, "username": "admin", "password": "correct horse battery"}
        )
        assert answer.status_code == 303
        cookie = next(c for c in browser.cookies.jar if c.name == "sb_idp_session")
        assert cookie.path == "/oidc.ashx"
        assert cookie.has_nonstandard_attr("HttpOnly")
        assert "samesite=lax" in answer.headers["set-cookie"].lower()
        location = answer.headers["location"]
        assert location.startswith(REDIRECT_URI + "?")
        params = redirect_params(answer)
        assert params["state"] == state
        assert params["iss"] == ISSUER

        token = await oauth.fetch_token(
            config["token_endpoint"], authorization_response=location, code_verifier=verifier
        )
        assert token["token_type"] == "Bearer"
        assert token["refresh_token"]
        keys = KeySet.import_key_set((await browser.get(config["jwks_uri"])).json())
        id_token = jwt.decode(token["id_token"], keys, algorithms=["RS256"])
        jwt.JWTClaimsRegistry(
            now=int(clock.now().timestamp()),
            iss={"essential": True, "value": ISSUER},
            aud={"essential": True, "value": "console"},
            nonce={"essential": True, "value": "n-0S6_WzA2Mj"},
            sub={"essential": True},
            auth_time={"essential": True},
        ).validate(id_token.claims)
        assert id_token.claims["preferred_username"] == "admin"

        # The access token opens the platform API.
        listed = await oauth.get("/api.ashx/v1/api-keys")
        assert listed.status_code == 200, listed.text

        # A second authorization is silent: the IdP session cookie stands for the user.
        url2, state2 = oauth.create_authorization_url(
            config["authorization_endpoint"], code_verifier=verifier
        )
        silent = await browser.get(url2)
        assert silent.status_code == 302
        assert redirect_params(silent)["state"] == state2
        assert "code" in redirect_params(silent)

    session_cookie = browser.cookies["sb_idp_session"]
    secrets = (params["code"], verifier, token["access_token"], token["id_token"], session_cookie)
    for secret in (*secrets, token["refresh_token"], "correct horse battery"):
        assert secret not in caplog.text


async def test_prompt_none_and_prompt_login(app: Starlette, browser: AsyncClient) -> None:
    async with oauth_client(app) as oauth:
        verifier = "a" * 64
        url, state = oauth.create_authorization_url(
            f"{ISSUER}/authorize", code_verifier=verifier, prompt="none"
        )
        # prompt=none without a session: back to the client with login_required, no page.
        answer = await browser.get(url)
        assert redirect_params(answer) == {
            "error": "login_required",
            "error_description": "the user is not signed in",
            "state": state,
            "iss": ISSUER,
        }
        url, _ = oauth.create_authorization_url(f"{ISSUER}/authorize", code_verifier=verifier)
        assert "code" in redirect_params(await sign_in(browser, url))
        # With a session prompt=none is silent, and prompt=login shows the form again.
        url, _ = oauth.create_authorization_url(
            f"{ISSUER}/authorize", code_verifier=verifier, prompt="none"
        )
        assert "code" in redirect_params(await browser.get(url))
        url, _ = oauth.create_authorization_url(
            f"{ISSUER}/authorize", code_verifier=verifier, prompt="login"
        )
        page = await browser.get(url)
        assert page.status_code == 200
        assert 'name="password"' in page.text


async def test_logout_ends_the_idp_session(app: Starlette, browser: AsyncClient) -> None:
    async with oauth_client(app) as oauth:
        verifier = "b" * 50
        url, _ = oauth.create_authorization_url(f"{ISSUER}/authorize", code_verifier=verifier)
        answer = await sign_in(browser, url)
        token = await oauth.fetch_token(
            f"{ISSUER}/token",
            authorization_response=answer.headers["location"],
            code_verifier=verifier,
        )
        # An unregistered post-logout URI is an error page, and the session lives on.
        refused = await browser.get(
            f"{ISSUER}/end_session",
            params={
                "id_token_hint": token["id_token"],
                "post_logout_redirect_uri": "https://evil.example/",
            },
        )
        assert refused.status_code == 400
        assert "location" not in refused.headers
        url, _ = oauth.create_authorization_url(
            f"{ISSUER}/authorize", code_verifier=verifier, prompt="none"
        )
        assert "code" in redirect_params(await browser.get(url))

        done = await browser.get(
            f"{ISSUER}/end_session",
            params={
                "id_token_hint": token["id_token"],
                "post_logout_redirect_uri": f"{BASE}/admin/",
                "state": "bye-1",
            },
        )
        assert done.status_code == 302
        assert done.headers["location"] == f"{BASE}/admin/?state=bye-1"
        # The session is over on the server, whatever the browser kept.
        assert redirect_params(await browser.get(url))["error"] == "login_required"


async def test_logout_without_hint_asks_first(app: Starlette, browser: AsyncClient) -> None:
    async with oauth_client(app) as oauth:
        url, _ = oauth.create_authorization_url(f"{ISSUER}/authorize", code_verifier="c" * 43)
        await sign_in(browser, url)
        stolen = dict(browser.cookies)
        confirm = await browser.get(f"{ISSUER}/end_session")
        assert confirm.status_code == 200
        assert "Sign out" in confirm.text
        silent, _ = oauth.create_authorization_url(
            f"{ISSUER}/authorize", code_verifier="c" * 43, prompt="none"
        )
        # A forged post without the CSRF token asks again; the session survives.
        forged = await browser.post(f"{ISSUER}/end_session", data={"csrf_token": "x" * 32})
        assert forged.status_code == 200
        assert "code" in redirect_params(await browser.get(silent))
        form = parse_form(confirm)
        signed_out = await browser.post(form.url, data=form.fields)
        assert signed_out.status_code == 200
        assert "signed out" in signed_out.text
        # Replaying the old cookie does not bring the session back.
        async with AsyncClient(
            transport=ASGITransport(app=app), base_url=BASE, cookies=stolen
        ) as replay:
            assert redirect_params(await replay.get(silent))["error"] == "login_required"


async def test_a_hint_of_another_user_asks_first(
    app: Starlette, browser: AsyncClient, acme: TenantFixture
) -> None:
    """Any user's ID token is easy to come by: only a hint naming the signed-in user signs the
    browser out without asking; another user's asks, and the session lives on."""
    async with oauth_client(app) as oauth:
        url, _ = oauth.create_authorization_url(f"{ISSUER}/authorize", code_verifier="d" * 43)
        await sign_in(browser, url)
        other = await browser.post(
            f"{ISSUER}/token",
            data={"grant_type": "password", "client_id": "cli", "username": "user",
                  "password": PASSWORD, "scope": "openid"},
        )  # fmt: skip
        hint = other.json()["id_token"]
        asked = await browser.get(f"{ISSUER}/end_session", params={"id_token_hint": hint})
        assert asked.status_code == 200
        assert "Sign out" in asked.text
        silent, _ = oauth.create_authorization_url(
            f"{ISSUER}/authorize", code_verifier="d" * 43, prompt="none"
        )
        assert "code" in redirect_params(await browser.get(silent))
