"""The authorization code flow's error cases, over HTTP, on both databases."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import pytest
from httpx import ASGITransport, AsyncClient

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
VERIFIER = "verifier-" + "k" * 50
SECRET_HOLDER: dict[str, str] = {}


def challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def console_authorize_url(host: str, **extra: str) -> str:
    """An authorization request of the console client on ``host``, PKCE with ``VERIFIER``."""
    params = {
        "response_type": "code",
        "client_id": "console",
        "redirect_uri": f"http://{host}/admin/callback",
        "code_challenge": challenge(VERIFIER),
        "code_challenge_method": "S256",
        **extra,
    }
    return f"http://{host}/oidc.ashx/authorize?{urlencode(params)}"


def authorize_url(**overrides: str | None) -> str:
    params: dict[str, str | None] = {
        "response_type": "code",
        "client_id": "console",
        "redirect_uri": REDIRECT_URI,
        "scope": "openid offline_access",
        "state": "st&=ä 1",
        "code_challenge": challenge(VERIFIER),
        "code_challenge_method": "S256",
        **overrides,
    }
    return "/oidc.ashx/authorize?" + urlencode({k: v for k, v in params.items() if v is not None})


@pytest.fixture
async def browser(runtime: Runtime, acme: TenantFixture) -> AsyncIterator[AsyncClient]:
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await clients.ensure_console_client(
            session, tenant=tenant, base_url=BASE, clock=runtime.clock
        )
        portal = await clients.create_client(
            session, tenant=tenant, client_id="portal", clock=runtime.clock,
            redirect_uris=["https://portal.example/cb"],
        )  # fmt: skip
        SECRET_HOLDER["portal"] = clients.new_secret(portal)
    app = create_app(runtime=runtime)
    async with (
        runtime.lifespan(),
        AsyncClient(transport=ASGITransport(app=app), base_url=BASE) as client,
    ):
        yield client


async def get_code(browser: AsyncClient, **overrides: str | None) -> str:
    answer = await sign_in(browser, authorize_url(**overrides))
    params = redirect_params(answer)
    assert params["state"] == "st&=ä 1"
    return params["code"]


async def exchange(
    browser: AsyncClient, code: str, **overrides: str | None
) -> tuple[int, dict[str, Any]]:
    form: dict[str, str | None] = {
        "grant_type": "authorization_code",
        "client_id": "console",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "code_verifier": VERIFIER,
        **overrides,
    }
    response = await browser.post(
        "/oidc.ashx/token", data={k: v for k, v in form.items() if v is not None}
    )
    return response.status_code, response.json()


async def test_wrong_verifier(browser: AsyncClient) -> None:
    code = await get_code(browser)
    status, body = await exchange(browser, code, code_verifier="w" * 60)
    assert (status, body["error"]) == (400, "invalid_grant")
    # The attempt used the code up: the right verifier no longer helps.
    status, body = await exchange(browser, code)
    assert (status, body["error"]) == (400, "invalid_grant")


async def test_reused_code_revokes_what_it_issued(browser: AsyncClient) -> None:
    code = await get_code(browser)
    status, tokens = await exchange(browser, code)
    assert status == 200
    status, body = await exchange(browser, code)
    assert (status, body["error"]) == (400, "invalid_grant")
    assert "already used" in body["error_description"]
    refreshed = await browser.post(
        "/oidc.ashx/token",
        data={
            "grant_type": "refresh_token",
            "client_id": "console",
            "refresh_token": tokens["refresh_token"],
        },
    )
    assert (refreshed.status_code, refreshed.json()["error"]) == (400, "invalid_grant")


async def test_expired_code(browser: AsyncClient, clock: ManualClock) -> None:
    code = await get_code(browser)
    clock.advance(61)
    status, body = await exchange(browser, code)
    assert (status, body["error"]) == (400, "invalid_grant")
    assert "expired" in body["error_description"]
    clock.advance(-61)
    fresh = await get_code(browser)
    clock.advance(59)
    assert (await exchange(browser, fresh))[0] == 200


async def test_code_bound_to_redirect_uri_and_client(browser: AsyncClient) -> None:
    code = await get_code(browser)
    status, body = await exchange(browser, code, redirect_uri=f"{BASE}/other")
    assert (status, body["error"]) == (400, "invalid_grant")
    code = await get_code(browser)
    status, body = await exchange(browser, code, client_id="cli")
    assert (status, body["error"]) == (400, "invalid_grant")
    status, body = await exchange(browser, code, client_id="nobody")
    assert (status, body["error"]) == (401, "invalid_client")
    status, body = await exchange(browser, code, code_verifier=None)
    assert (status, body["error"]) == (400, "invalid_request")


@pytest.mark.parametrize(
    "overrides",
    [
        {"redirect_uri": "https://evil.example/cb"},
        {"redirect_uri": REDIRECT_URI + "/"},
        {"redirect_uri": REDIRECT_URI.upper()},
        {"redirect_uri": None},
        {"client_id": "nobody"},
        {"client_id": None},
        {"redirect_uri": "https://portal.example/cb"},  # another client's URI
    ],
)
async def test_untrusted_client_or_uri_gets_an_error_page(
    browser: AsyncClient, overrides: dict[str, str | None]
) -> None:
    page = await browser.get(authorize_url(**overrides))
    assert page.status_code == 400
    assert "location" not in page.headers
    assert page.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert "cannot be served" in page.text


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"code_challenge": None, "code_challenge_method": None}, "invalid_request"),
        ({"code_challenge_method": None}, "invalid_request"),  # defaults to plain
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge": "short"}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"scope": "openid admin"}, "invalid_scope"),
        ({"prompt": "none login"}, "invalid_request"),
    ],
)
async def test_bad_request_redirects_with_error(
    browser: AsyncClient, overrides: dict[str, str | None], error: str
) -> None:
    answer = await browser.get(authorize_url(**overrides))
    assert answer.status_code == 302
    assert answer.headers["location"].startswith(REDIRECT_URI + "?")
    params = redirect_params(answer)
    assert params["error"] == error
    assert params["state"] == "st&=ä 1"
    assert "code" not in params


async def test_bad_csrf_signs_nobody_in(browser: AsyncClient) -> None:
    page = await browser.get(authorize_url())
    form = parse_form(page)
    fields = {**form.fields, "username": "admin", "password": PASSWORD}
    forged = await browser.post(form.url, data={**fields, "csrf_token": "f" * 32})
    assert forged.status_code == 400
    assert "location" not in forged.headers
    assert "sb_idp_session" not in forged.headers.get("set-cookie", "")
    missing = await browser.post(form.url, data={"username": "admin", "password": PASSWORD})
    assert missing.status_code == 400
    # A cross-site post carries no CSRF cookie at all.
    async with AsyncClient(transport=browser._transport, base_url=BASE) as other_site:
        cross = await other_site.post(form.url, data=fields)
    assert cross.status_code == 400
    assert "sb_idp_session" not in cross.headers.get("set-cookie", "")
    silent = await browser.get(authorize_url(prompt="none"))
    assert redirect_params(silent)["error"] == "login_required"


async def test_wrong_password_then_locked_user(browser: AsyncClient, clock: ManualClock) -> None:
    for _ in range(5):
        answer = await sign_in(browser, authorize_url(), password="not-the-password")
        assert answer.status_code == 400
        assert "Invalid username or password." in answer.text
        assert 'value="admin"' in answer.text
    locked = await sign_in(browser, authorize_url())
    assert locked.status_code == 429
    assert int(locked.headers["retry-after"]) > 0
    assert "too many failed sign-in attempts" in locked.text
    assert "location" not in locked.headers
    clock.advance(301)
    assert "code" in redirect_params(await sign_in(browser, authorize_url()))


async def test_the_username_is_escaped(browser: AsyncClient) -> None:
    answer = await sign_in(browser, authorize_url(), username='"><script>alert(1)</script>')
    assert answer.status_code == 400
    assert "<script>" not in answer.text
    assert "&lt;script&gt;" in answer.text


async def test_confidential_client_must_authenticate(browser: AsyncClient) -> None:
    url = authorize_url(client_id="portal", redirect_uri="https://portal.example/cb")
    code = redirect_params(await sign_in(browser, url))["code"]
    common = {"client_id": "portal", "redirect_uri": "https://portal.example/cb"}
    status, body = await exchange(browser, code, **common)
    assert (status, body["error"]) == (401, "invalid_client")
    status, body = await exchange(browser, code, **common, client_secret="cs_wrong")
    assert (status, body["error"]) == (401, "invalid_client")
    # Failed client authentication does not burn the code: the real client still redeems it.
    basic = base64.b64encode(f"portal:{SECRET_HOLDER['portal']}".encode()).decode()
    response = await browser.post(
        "/oidc.ashx/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": "https://portal.example/cb",
            "code_verifier": VERIFIER,
        },
        headers={"Authorization": f"Basic {basic}"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["id_token"]


async def test_repeated_parameter_and_unknown_host(browser: AsyncClient) -> None:
    page = await browser.get(authorize_url() + "&client_id=console")
    assert page.status_code == 400
    assert "location" not in page.headers
    elsewhere = await browser.get(authorize_url(), headers={"Host": "unknown.test"})
    assert elsewhere.status_code == 404


async def test_a_parameter_given_twice_is_refused_everywhere(
    browser: AsyncClient, acme: TenantFixture
) -> None:
    """RFC 6749 §3.1 and §3.2: a parameter MUST NOT appear twice, and which copy would win is
    the parser's whim. The token endpoint, the login form and the logout refuse it, and do
    nothing."""
    grant = [("grant_type", "password"), ("username", "admin"), ("password", PASSWORD)]
    twice = await browser.post(
        "/oidc.ashx/token",
        content=urlencode([*grant, ("client_id", "cli"), ("client_id", "console")]),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert (twice.status_code, twice.json()["error"]) == (400, "invalid_request")
    assert "client_id" in twice.json()["error_description"]

    page = await browser.get(authorize_url())
    form = parse_form(page)
    fields = [*form.fields.items(), ("username", "nobody"), ("username", "admin"),
              ("password", PASSWORD)]  # fmt: skip
    refused = await browser.post(
        form.url, content=urlencode(fields),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    assert refused.status_code == 400  # the form again: no code, no session
    assert "sb_idp_session" not in refused.headers.get("set-cookie", "")

    code = await get_code(browser)  # signed in now
    status, tokens = await exchange(browser, code)
    assert status == 200, tokens
    logout = await browser.get(
        "/oidc.ashx/end_session",
        params=[("id_token_hint", tokens["id_token"]), ("state", "a"), ("state", "b")],
    )
    assert logout.status_code == 400
    assert "repeated" in logout.text
    again = await browser.get(authorize_url(prompt="none"))
    assert "code" in redirect_params(again)  # the session lives on


async def test_a_client_authenticates_once_and_a_public_one_not_at_all(
    browser: AsyncClient,
) -> None:
    """RFC 6749 §2.3: a client MUST NOT use more than one authentication method in a request;
    a public client that sends a secret it does not have fails authentication."""
    secret = SECRET_HOLDER["portal"]
    form = {"grant_type": "authorization_code", "code": "x", "redirect_uri": REDIRECT_URI}
    both = await browser.post(
        "/oidc.ashx/token", data={**form, "client_id": "portal", "client_secret": secret},
        auth=("portal", secret),
    )  # fmt: skip
    assert (both.status_code, both.json()["error"]) == (400, "invalid_request")
    public = await browser.post(
        "/oidc.ashx/token", data={**form, "code_verifier": VERIFIER}, auth=("console", "guess")
    )
    assert (public.status_code, public.json()["error"]) == (401, "invalid_client")
    assert public.headers["www-authenticate"].startswith("Basic")
