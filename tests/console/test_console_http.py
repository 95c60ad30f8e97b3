"""The console over HTTP: where it sends a browser, what it refuses, and its headers."""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from httpx import ASGITransport, AsyncClient

from switchboard.app import create_app
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.console.signin import console_clients, sign_in
from tests.factories import TenantFixture


async def test_pages_send_a_stranger_to_the_sign_in(app_client: AsyncClient) -> None:
    assert (await app_client.get("/admin/")).headers["location"] == "/admin/calls"
    for path in ("/admin/calls", "/admin/webhooks", "/admin/api-keys"):
        response = await app_client.get(path)
        assert response.status_code == 303
        assert response.headers["location"] == f"/admin/login?next={quote(path, safe='')}"
    # a form post or an htmx fragment cannot be asked for again: plain sign-in
    assert (await app_client.post("/admin/api-keys")).headers["location"] == "/admin/login"
    fragment = await app_client.get("/admin/calls", headers={"HX-Request": "true"})
    assert fragment.headers["location"] == "/admin/login"


async def test_the_page_asked_for_is_shown_after_the_sign_in(
    browsers: dict[str, AsyncClient],
) -> None:
    client = browsers["acme"]
    asked = await client.get("/admin/webhooks/abc", params={"page": "2"})
    assert asked.status_code == 303
    done = await sign_in(client, login=asked.headers["location"])
    assert (done.status_code, done.headers["location"]) == (303, "/admin/webhooks/abc?page=2")


async def test_the_sign_in_goes_back_only_to_a_page_of_the_same_app(
    browsers: dict[str, AsyncClient],
) -> None:
    client = browsers["acme"]
    for elsewhere in (
        "https://evil.example.com/admin/calls", "//evil.example.com/admin/", "/\\evil.example.com",
        "/admin/../oidc.ashx/authorize", "/admin/%2E%2E/app/today", "/app/today",
        "/adminx/calls", "/admin/login", "/admin/calls#x", "/admin/calls\r\nSet-Cookie: a=b",
    ):  # fmt: skip
        start = f"/admin/login?{urlencode({'next': elsewhere})}"
        done = await sign_in(client, login=start)
        assert (done.status_code, done.headers["location"]) == (303, "/admin/calls"), elsewhere


async def test_a_forged_session_cookie_is_no_session(app_client: AsyncClient) -> None:
    app_client.cookies.set("sb_console", "v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", path="/admin")
    response = await app_client.get("/admin/calls")
    assert response.status_code == 303
    assert response.headers["location"] == "/admin/login?next=%2Fadmin%2Fcalls"


async def test_sign_in_starts_an_authorization_code_flow_with_pkce(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    response = await app_client.get("/admin/login")
    assert response.status_code == 303
    target = urlsplit(response.headers["location"])
    assert (target.scheme, target.netloc, target.path) == (
        "http",
        "acme.test",
        "/oidc.ashx/authorize",
    )
    query = {k: v[0] for k, v in parse_qs(target.query).items()}
    assert query["response_type"] == "code"
    assert query["client_id"] == "console"
    assert query["redirect_uri"] == "http://acme.test/admin/callback"
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert len(query["state"]) >= 32
    assert len(query["nonce"]) >= 32
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("sb_console_login=")
    for attribute in ("HttpOnly", "SameSite=lax", "Path=/admin"):
        assert attribute in cookie
    assert "Secure" not in cookie  # plain http here; https deployments get Secure
    again = urlsplit((await app_client.get("/admin/login")).headers["location"])
    assert parse_qs(again.query)["state"] != [query["state"]]


async def test_a_callback_without_the_login_state_is_refused(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    stray = await app_client.get("/admin/callback", params={"code": "x", "state": "y"})
    assert stray.status_code == 400
    assert "state does not match" in stray.text
    assert "sb_console=" not in stray.headers.get("set-cookie", "")
    await app_client.get("/admin/login")  # a login is pending, but for another state
    wrong = await app_client.get("/admin/callback", params={"code": "x", "state": "other"})
    assert wrong.status_code == 400
    assert "sb_console=" not in wrong.headers.get("set-cookie", "")
    denied = await app_client.get(
        "/admin/callback", params={"error": "access_denied", "error_description": "no <b>"}
    )
    assert denied.status_code == 400
    assert "no &lt;b&gt;" in denied.text


async def test_every_page_forbids_framing_and_inline_code(app_client: AsyncClient) -> None:
    for path in ("/admin/signed-out", "/admin/callback", "/admin/nowhere"):
        response = await app_client.get(path)
        csp = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp
        for directive in ("script-src 'self'", "style-src 'self'", "base-uri 'none'"):
            assert directive in csp
        for weakness in ("unsafe-inline", "unsafe-eval", "http:", "*"):
            assert weakness not in csp
        assert response.headers["x-frame-options"] == "DENY"
        assert "<script>" not in response.text
        assert "style=" not in response.text


async def test_static_assets_are_vendored_and_served_no_store(app_client: AsyncClient) -> None:
    page = (await app_client.get("/admin/signed-out")).text
    assert "/admin/static/htmx-2.0.11.min.js?v=" in page
    response = await app_client.get("/admin/static/htmx-2.0.11.min.js")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"  # every response (decision 0014)
    assert b"htmx" in response.content[:2000]
    licence = await app_client.get("/admin/static/htmx-LICENSE.txt")
    assert "Zero-Clause BSD" in licence.text


async def test_behind_https_the_cookies_are_secure(settings: Settings, acme: TenantFixture) -> None:
    # A fresh object: model_copy would carry over the cached public_scheme of the original.
    secure = Settings(**(settings.model_dump() | {"public_base_url": "https://acme.test"}))
    runtime = Runtime(secure)
    try:
        transport = ASGITransport(app=create_app(runtime=runtime))
        async with AsyncClient(transport=transport, base_url="https://acme.test") as client:
            response = await client.get("/admin/login")
        assert response.status_code == 303
        assert response.headers["location"].startswith("https://acme.test/oidc.ashx/authorize?")
        assert (
            "redirect_uri=https%3A%2F%2Facme.test%2Fadmin%2Fcallback"
            in response.headers["location"]
        )
        assert "Secure" in response.headers["set-cookie"]
    finally:
        await runtime.db.dispose()


async def test_a_tenant_on_two_domains_signs_in_on_either(runtime: Runtime) -> None:
    """The console's and the linen app's clients are registered on every domain of the tenant
    (as ``switchboard tenant create`` and ``demo`` make them), so a browser that opened the
    second domain completes the sign-in instead of meeting an unregistered redirect URI."""
    domains = ["ops.test", "ops-alias.test"]
    await console_clients(runtime, await factories.tenant(runtime, "ops", domains))
    app = create_app(runtime=runtime)
    async with runtime.lifespan():
        for domain in domains:
            for mount, page in (("/admin", "/admin/calls"), ("/app", "/app/today")):
                async with AsyncClient(
                    transport=ASGITransport(app=app), base_url=f"http://{domain}"
                ) as browser:
                    signed_in = await sign_in(browser, mount=mount)
                    assert signed_in.status_code == 303, (domain, mount, signed_in.text)
                    assert (await browser.get(page)).status_code == 200, (domain, mount)


async def test_head_of_the_live_stream_ends_with_its_headers(runtime: Runtime) -> None:
    """HEAD is the GET without a body (decision 0015), a stream's included: the answer ends
    with the headers instead of following the stream."""
    await console_clients(runtime, await factories.tenant(runtime, "ops", ["ops.test"]))
    app = create_app(runtime=runtime)
    async with (
        runtime.lifespan(),
        AsyncClient(transport=ASGITransport(app=app), base_url="http://ops.test") as browser,
    ):
        assert (await sign_in(browser)).status_code == 303
        head = await asyncio.wait_for(browser.head("/admin/calls/live"), timeout=10)
        assert head.status_code == 200
        assert head.headers["content-type"].startswith("text/event-stream")
        assert head.content == b""
