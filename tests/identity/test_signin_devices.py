"""Device cookies (decision 0031): wrong passwords typed elsewhere lock a user out of every browser
but those the user signed in with, and wrong passwords in such a browser lock it alone. Driven
through the login page with one cookie jar per browser, on both databases."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack

import pytest
from httpx import ASGITransport, AsyncClient, Response
from sqlalchemy import select

from switchboard.app import create_app
from switchboard.auth.models import User
from switchboard.identity import clients, lockout
from switchboard.identity import service as identity
from switchboard.identity.signin.tasks import purge
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants
from tests.console.signin import console_clients
from tests.factories import PASSWORD, TenantFixture
from tests.identity.signin_helpers import parse_form, redirect_params, sign_in
from tests.identity.test_signin_errors import console_authorize_url

WRONG = "not-the-password"
Browser = Callable[[], AsyncClient]


def url(host: str, **extra: str) -> str:
    # the login page each time, even in a browser signed in
    return console_authorize_url(host, **{"prompt": "login", **extra})


@pytest.fixture
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    if request.node.name.startswith("test_the_device_cookie_is_secure"):
        return settings.model_copy(update={"public_base_url": "https://acme.test"})
    return settings


@pytest.fixture
async def new_browser(
    runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> AsyncIterator[Browser]:
    """Makes browsers of one server, each with a cookie jar of its own."""
    await console_clients(runtime, acme, globex)
    transport = ASGITransport(app=create_app(runtime=runtime))
    async with runtime.lifespan(), AsyncExitStack() as stack:

        def make() -> AsyncClient:
            client = AsyncClient(transport=transport)
            stack.push_async_callback(client.aclose)
            return client

        yield make


async def attempt(browser: AsyncClient, host: str, password: str, username: str = "admin") -> int:
    """One try at the login page: 303 signed in, 400 wrong password, 429 locked out."""
    answer = await sign_in(browser, url(host), username=username, password=password)
    if answer.status_code == 303:
        assert "code" in redirect_params(answer)
    return answer.status_code


async def lock_out(browser: AsyncClient, host: str, username: str = "admin") -> None:
    for _ in range(5):
        assert await attempt(browser, host, WRONG, username) == 400
    assert await attempt(browser, host, PASSWORD, username) == 429


def device_cookie(browser: AsyncClient) -> str:
    value = next(c.value for c in browser.cookies.jar if c.name == lockout.DEVICE_COOKIE)
    assert value is not None
    return value


async def password_grant(browser: AsyncClient, host: str) -> int:
    answer = await browser.post(
        f"http://{host}/oidc.ashx/token",
        data={"grant_type": "password", "client_id": "cli", "username": "admin",
              "password": PASSWORD},
    )  # fmt: skip
    return answer.status_code


def set_cookies(answer: Response) -> list[str]:
    return [v for k, v in answer.headers.multi_items() if k == "set-cookie"]


async def test_an_attacker_locks_the_user_out_of_every_browser_but_the_users_own(
    new_browser: Browser, acme: TenantFixture
) -> None:
    own, attacker, elsewhere = new_browser(), new_browser(), new_browser()
    assert await attempt(own, acme.host, PASSWORD) == 303
    await lock_out(attacker, acme.host)
    # Without the device cookie: locked, the right password notwithstanding, and so is the
    # password grant (API clients keep decision 0006 as it was).
    assert await attempt(elsewhere, acme.host, PASSWORD) == 429
    assert await password_grant(elsewhere, acme.host) == 429
    # The browser the user signed in with goes on signing in, again and again.
    assert await attempt(own, acme.host, PASSWORD) == 303
    assert await attempt(own, acme.host, PASSWORD) == 303
    # Its success neither lifts the attacker's lockout nor restarts the attacker's count.
    assert await attempt(attacker, acme.host, PASSWORD) == 429
    assert await attempt(elsewhere, acme.host, PASSWORD) == 429


async def test_wrong_passwords_in_the_users_browser_lock_that_browser_only(
    new_browser: Browser, acme: TenantFixture, clock: ManualClock
) -> None:
    own, other = new_browser(), new_browser()
    assert await attempt(own, acme.host, PASSWORD) == 303
    await lock_out(own, acme.host)
    locked = await sign_in(own, url(acme.host))
    assert locked.status_code == 429
    assert 0 < int(locked.headers["retry-after"]) <= 301
    assert "too many failed sign-in attempts" in locked.text
    # Everyone else is not locked: the user in another browser, the password grant.
    assert await password_grant(other, acme.host) == 200
    assert await attempt(other, acme.host, PASSWORD) == 303
    # Four wrong passwords elsewhere do not add up with the device's five.
    for _ in range(4):
        assert await attempt(new_browser(), acme.host, WRONG) == 400
    assert await attempt(new_browser(), acme.host, PASSWORD) == 303
    # The device's lockout runs out as the user's does, and a success forgets its count.
    clock.advance(301)
    assert await attempt(own, acme.host, PASSWORD) == 303
    for _ in range(4):
        assert await attempt(own, acme.host, WRONG) == 400
    assert await attempt(own, acme.host, PASSWORD) == 303


async def test_the_device_lockout_doubles_and_an_unlock_lifts_it(
    new_browser: Browser, acme: TenantFixture, runtime: Runtime, clock: ManualClock
) -> None:
    own = new_browser()
    assert await attempt(own, acme.host, PASSWORD) == 303
    await lock_out(own, acme.host)
    clock.advance(301)
    assert await attempt(own, acme.host, WRONG) == 400  # the sixth: 600 s now
    clock.advance(301)
    assert await attempt(own, acme.host, PASSWORD) == 429
    assert await attempt(new_browser(), acme.host, PASSWORD) == 303  # the device's lockout
    async with runtime.db.transaction() as session:
        await identity.unlock_user(session, tenant_id=acme.id, username="admin")
    assert await attempt(own, acme.host, PASSWORD) == 303


async def test_forged_and_foreign_device_cookies_count_as_none(
    new_browser: Browser, acme: TenantFixture, globex: TenantFixture, runtime: Runtime
) -> None:
    own, other_user, other_tenant = new_browser(), new_browser(), new_browser()
    assert await attempt(own, acme.host, PASSWORD) == 303
    assert await attempt(other_user, acme.host, PASSWORD, username="power") == 303
    assert await attempt(other_tenant, globex.host, PASSWORD) == 303  # globex's admin
    await lock_out(new_browser(), acme.host)

    async def with_cookie(value: str) -> int:
        browser = new_browser()
        browser.cookies.set(lockout.DEVICE_COOKIE, value, domain=acme.host)
        return await attempt(browser, acme.host, PASSWORD)

    # Another user's device cookie of the same tenant, and globex's admin's one (same
    # username, same password, another tenant) brought to acme's host.
    assert await attempt(other_user, acme.host, PASSWORD) == 429
    assert await with_cookie(device_cookie(other_tenant)) == 429
    # Garbage, and a cookie right in every field but sealed under another key.
    assert await with_cookie("v1:" + "A" * 80) == 429
    async with runtime.db.transaction() as session:
        admin = (
            await session.execute(
                select(User).where(User.tenant_id == acme.id, User.username == "admin")
            )
        ).scalar_one()
        entries = lockout.remember([], admin, now=runtime.clock.now(), ttl_seconds=3600)
    assert await with_cookie(lockout.DeviceCookies("another-secret-key" * 2).seal(entries)) == 429
    assert await with_cookie(lockout.device_cookies(runtime.settings.secret_key).seal(entries)) == (
        303
    )
    # The genuine one, copied into another browser, is the device (the cookie is the device).
    assert await with_cookie(device_cookie(own)) == 303


async def test_one_browser_is_known_for_several_users(
    new_browser: Browser, acme: TenantFixture
) -> None:
    shared = new_browser()
    assert await attempt(shared, acme.host, PASSWORD) == 303
    assert await attempt(shared, acme.host, PASSWORD, username="power") == 303
    await lock_out(new_browser(), acme.host)
    await lock_out(new_browser(), acme.host, username="power")
    assert await attempt(shared, acme.host, PASSWORD) == 303
    assert await attempt(shared, acme.host, PASSWORD, username="power") == 303
    # Locking the browser for one user leaves it open for the other.
    await lock_out(shared, acme.host, username="power")
    assert await attempt(shared, acme.host, PASSWORD) == 303


async def test_a_new_password_or_signing_out_everywhere_distrusts_the_devices(
    new_browser: Browser, acme: TenantFixture, runtime: Runtime
) -> None:
    own = new_browser()
    assert await attempt(own, acme.host, PASSWORD) == 303
    await lock_out(new_browser(), acme.host)
    assert await attempt(own, acme.host, PASSWORD) == 303
    async with runtime.db.transaction() as session:
        await identity.sign_out_everywhere(
            session, tenant_id=acme.id, username="admin", clock=runtime.clock
        )
    assert await attempt(own, acme.host, PASSWORD) == 429
    async with runtime.db.transaction() as session:  # lifts the lockout too
        await identity.set_password(
            session, tenant_id=acme.id, username="admin", password=PASSWORD + "!",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
    assert await attempt(own, acme.host, PASSWORD + "!") == 303  # a device again
    await lock_out(new_browser(), acme.host)
    assert await attempt(own, acme.host, PASSWORD + "!") == 303
    async with runtime.db.transaction() as session:
        await identity.set_password(
            session, tenant_id=acme.id, username="admin", password=PASSWORD,
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
    await lock_out(new_browser(), acme.host)
    assert await attempt(own, acme.host, PASSWORD) == 429


async def test_wrong_passwords_at_once_are_all_counted(
    new_browser: Browser, acme: TenantFixture
) -> None:
    own = new_browser()
    assert await attempt(own, acme.host, PASSWORD) == 303
    page = await own.get(url(acme.host))
    form = parse_form(page)
    fields = {**form.fields, "username": "admin", "password": WRONG}
    answers = await asyncio.gather(*(own.post(form.url, data=fields) for _ in range(5)))
    assert sorted(a.status_code for a in answers) == [400] * 5
    assert await attempt(own, acme.host, PASSWORD) == 429
    assert await attempt(new_browser(), acme.host, PASSWORD) == 303


async def test_the_device_cookie_is_scoped_and_its_tally_purged(
    new_browser: Browser, acme: TenantFixture, runtime: Runtime, clock: ManualClock
) -> None:
    own = new_browser()
    answer = await sign_in(own, url(acme.host))
    device = next(v for v in set_cookies(answer) if v.startswith(f"{lockout.DEVICE_COOKIE}="))
    attributes = {part.strip().lower() for part in device.split(";")[1:]}
    assert attributes == {
        "httponly", "max-age=7776000", "path=/oidc.ashx/authorize", "samesite=lax",
    } | {a for a in attributes if a.startswith("expires=")}  # fmt: skip
    # A wrong password in the device browser leaves a tally, gone once the cookie has expired.
    assert await attempt(own, acme.host, WRONG) == 400
    async with runtime.db.transaction() as session:
        assert await purge(session, now=clock.now()) == (0, 0, 0, 0)
    clock.advance(7776000 + 1)
    async with runtime.db.transaction() as session:
        assert (await purge(session, now=clock.now()))[2] == 1


async def test_the_device_cookie_is_secure_behind_https(
    runtime: Runtime, acme: TenantFixture
) -> None:
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await clients.ensure_console_client(
            session, tenant=tenant, base_url="http://acme.test", clock=runtime.clock
        )
    transport = ASGITransport(app=create_app(runtime=runtime))
    async with runtime.lifespan(), AsyncClient(transport=transport) as tls:
        answer = await sign_in(tls, url(acme.host).replace("http://", "https://"))
    assert answer.status_code == 303, answer.text
    device = next(v for v in set_cookies(answer) if v.startswith(f"{lockout.DEVICE_COOKIE}="))
    assert "secure" in device.lower()
