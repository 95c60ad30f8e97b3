"""The IdP session: its lifetime, max_age, disabled users, and the console client of new tenants."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy import func, select, update

from switchboard.app import create_app
from switchboard.auth.models import AuthorizationCode, BrowserSession, User
from switchboard.identity import clients
from switchboard.identity.signin.tasks import purge
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants
from tests.conftest import PRIMARY_HOST
from tests.factories import TenantFixture
from tests.identity.signin_helpers import redirect_params, sign_in
from tests.identity.test_signin_errors import authorize_url

BASE = f"http://{PRIMARY_HOST}"


@pytest.fixture
async def browser(runtime: Runtime, acme: TenantFixture) -> AsyncIterator[AsyncClient]:
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await clients.ensure_console_client(
            session, tenant=tenant, base_url=BASE, clock=runtime.clock
        )
    app = create_app(runtime=runtime)
    async with (
        runtime.lifespan(),
        AsyncClient(transport=ASGITransport(app=app), base_url=BASE) as client,
    ):
        yield client


async def test_session_lifetime_and_max_age(browser: AsyncClient, clock: ManualClock) -> None:
    assert "code" in redirect_params(await sign_in(browser, authorize_url()))
    clock.advance(600)
    # Signed in 600 s ago: max_age=300 asks again, max_age=900 does not.
    assert (await browser.get(authorize_url(max_age="300"))).status_code == 200
    assert "code" in redirect_params(await browser.get(authorize_url(max_age="900")))
    assert redirect_params(await browser.get(authorize_url(max_age="soon")))["error"] == (
        "invalid_request"
    )
    clock.advance(8 * 3600 - 600)  # the session's 8 hours are over
    assert redirect_params(await browser.get(authorize_url(prompt="none")))["error"] == (
        "login_required"
    )


async def test_a_disabled_user_loses_the_session(
    browser: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    assert "code" in redirect_params(await sign_in(browser, authorize_url()))
    async with runtime.db.transaction() as session:
        await session.execute(update(User).where(User.tenant_id == acme.id).values(disabled=True))
    silent = await browser.get(authorize_url(prompt="none"))
    assert redirect_params(silent)["error"] == "login_required"
    page = await sign_in(browser, authorize_url())
    assert page.status_code == 400
    assert "location" not in page.headers


async def test_a_tenant_created_over_rest_gets_the_console_client(
    browser: AsyncClient, acme: TenantFixture
) -> None:
    created = await browser.post(
        "/api.ashx/v1/tenants",
        json={"name": "initech", "domains": ["initech.test"]},
        headers=await acme.auth(browser),
    )
    assert created.status_code == 201, created.text
    url = authorize_url(redirect_uri="http://initech.test/admin/callback")
    page = await browser.get(url, headers={"Host": "initech.test"})
    assert page.status_code == 200
    assert "Sign in to initech" in page.text
    # acme's console redirect URI is not initech's.
    foreign = await browser.get(authorize_url(), headers={"Host": "initech.test"})
    assert foreign.status_code == 400


@pytest.fixture
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """The HTTPS deployment for the cookie test only."""
    if request.node.name.startswith("test_cookies_are_secure"):
        return settings.model_copy(update={"public_base_url": f"https://{PRIMARY_HOST}"})
    return settings


async def test_cookies_are_secure_behind_https(browser: AsyncClient, runtime: Runtime) -> None:
    page = await browser.get(authorize_url())
    assert "secure" in page.headers["set-cookie"].lower()
    # A client on https keeps and sends the Secure cookies back.
    transport = ASGITransport(app=create_app(runtime=runtime))
    async with AsyncClient(transport=transport, base_url=f"https://{PRIMARY_HOST}") as tls:
        answer = await sign_in(tls, authorize_url())
    assert answer.status_code == 303, answer.text
    set_cookie = [v for k, v in answer.headers.multi_items() if k == "set-cookie"]
    session_cookie = next(v for v in set_cookie if v.startswith("sb_idp_session="))
    for attribute in ("httponly", "samesite=lax", "secure", "path=/oidc.ashx"):
        assert attribute in session_cookie.lower()


async def test_purge_forgets_spent_codes_and_sessions(
    browser: AsyncClient, runtime: Runtime, clock: ManualClock
) -> None:
    async def counts() -> tuple[int, int]:
        async with runtime.db.transaction() as session:
            codes = await session.scalar(select(func.count()).select_from(AuthorizationCode))
            sessions = await session.scalar(select(func.count()).select_from(BrowserSession))
            return int(codes or 0), int(sessions or 0)

    await sign_in(browser, authorize_url())
    await browser.get(authorize_url())
    assert await counts() == (2, 1)
    async with runtime.db.transaction() as session:
        assert await purge(session, now=clock.now()) == (0, 0, 0, 0)
    clock.advance(86400 + 61)  # a day past the codes' expiry; the 8-hour session is over too
    async with runtime.db.transaction() as session:
        assert await purge(session, now=clock.now()) == (2, 1, 0, 0)
    assert await counts() == (0, 0)
