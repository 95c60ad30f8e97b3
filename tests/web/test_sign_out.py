"""Signing out of a web app ends the session on the server: a copy of its cookie (stolen, or
kept by another tab or device) is refused from then on, like a request without one."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy import func, select

from switchboard.app import create_app
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.web.cookies import SESSION_SECONDS
from switchboard.web.models import EndedWebSession
from switchboard.web.tasks import KEEP_ENDED, purge
from tests.console.signin import console_clients, csrf_of, sign_in
from tests.factories import TenantFixture

# (mount, session cookie, a page, a form the page posts to, who signs in)
APPS = [
    pytest.param(
        "/admin", "sb_console", "/admin/api-keys", "/admin/api-keys", "admin", id="console"
    ),
    pytest.param("/app", "sb_linen", "/app/properties", "/app/properties", "power", id="linen"),
]


@pytest.fixture
async def transport(runtime: Runtime, acme: TenantFixture) -> AsyncIterator[ASGITransport]:
    await console_clients(runtime, acme)
    app = create_app(runtime=runtime)
    async with runtime.lifespan():
        yield ASGITransport(app=app)


def browser(transport: ASGITransport, acme: TenantFixture) -> AsyncClient:
    return AsyncClient(transport=transport, base_url=f"http://{acme.host}")


async def ended_rows(runtime: Runtime) -> int:
    async with runtime.db.transaction(read_only=True) as session:
        return int(await session.scalar(select(func.count()).select_from(EndedWebSession)) or 0)


async def sign_out(client: AsyncClient, mount: str, page: str) -> None:
    token = csrf_of((await client.get(page)).text)
    out = await client.post(f"{mount}/logout", data={"csrf": token})
    assert out.status_code == 303, out.text
    assert "end_session" in out.headers["location"] or "/signed-out" in out.headers["location"]


@pytest.mark.parametrize(("mount", "cookie", "page", "form", "username"), APPS)
async def test_a_copy_of_a_signed_out_session_is_signed_out(
    transport: ASGITransport,
    acme: TenantFixture,
    runtime: Runtime,
    mount: str,
    cookie: str,
    page: str,
    form: str,
    username: str,
) -> None:
    async with (
        browser(transport, acme) as tab,
        browser(transport, acme) as copy,
        browser(transport, acme) as elsewhere,
        browser(transport, acme) as nobody,
    ):
        assert (await sign_in(tab, username, mount=mount)).status_code == 303
        assert (await sign_in(elsewhere, username, mount=mount)).status_code == 303
        kept = tab.cookies.get(cookie)
        assert kept
        copy.cookies.set(cookie, kept, path=mount)
        token = csrf_of((await copy.get(page)).text)  # the copy is as good as the original

        await sign_out(tab, mount, page)
        assert await ended_rows(runtime) == 1

        unsigned = await nobody.get(page)
        assert unsigned.status_code == 303
        assert unsigned.headers["location"].startswith(f"{mount}/login?next=")
        for client in (copy, tab):
            stale = await client.get(page)
            assert stale.status_code == unsigned.status_code
            assert stale.headers["location"] == unsigned.headers["location"]
        posted = await copy.post(form, data={"csrf": token, "name": "after sign-out"})
        unsigned_post = await nobody.post(form, data={"csrf": token, "name": "after sign-out"})
        assert posted.status_code == unsigned_post.status_code == 303
        assert posted.headers["location"] == unsigned_post.headers["location"] == f"{mount}/login"
        again = await copy.post(f"{mount}/logout", data={"csrf": token})
        assert again.headers["location"] == f"{mount}/login"  # no session left to sign out of

        # The same user's other session, and a new sign-in in the same browser, go on.
        assert (await elsewhere.get(page)).status_code == 200
        assert (await sign_in(tab, username, mount=mount)).status_code == 303
        assert (await tab.get(page)).status_code == 200


async def test_signing_out_of_one_app_ends_the_other_in_that_browser(
    transport: ASGITransport, acme: TenantFixture
) -> None:
    """The sign-out goes on to the provider's end_session, which ends the provider session both
    apps of this browser signed in through: the other app's session ends with it (decision
    0605). Another browser of the same user goes on."""
    async with browser(transport, acme) as client, browser(transport, acme) as elsewhere:
        assert (await sign_in(client, "admin")).status_code == 303
        assert (await sign_in(client, "admin", mount="/app")).status_code == 303
        assert (await sign_in(elsewhere, "admin")).status_code == 303
        token = csrf_of((await client.get("/app/properties")).text)
        out = await client.post("/app/logout", data={"csrf": token})
        end_session = urlsplit(out.headers["location"])
        assert end_session.path == "/oidc.ashx/end_session"
        ended = await client.get(f"{end_session.path}?{end_session.query}")
        assert ended.status_code == 302
        assert (await client.get("/app/properties")).status_code == 303
        assert (await client.get("/admin/calls")).status_code == 303
        assert (await elsewhere.get("/admin/calls")).status_code == 200


async def test_ended_sessions_are_purged_a_day_after_they_expire(
    transport: ASGITransport, acme: TenantFixture, runtime: Runtime, clock: ManualClock
) -> None:
    async with browser(transport, acme) as first, browser(transport, acme) as second:
        assert (await sign_in(first, "admin")).status_code == 303
        clock.advance(3600)
        assert (await sign_in(second, "admin")).status_code == 303
        await sign_out(first, "/admin", "/admin/calls")
        await sign_out(second, "/admin", "/admin/calls")
    assert await ended_rows(runtime) == 2
    clock.advance(SESSION_SECONDS - 3600)  # the first session's expiry: its cookie is void
    async with runtime.db.transaction() as session:
        # a purger whose clock runs up to a day ahead of a serving process keeps the row
        assert await purge(session, now=clock.now()) == (0, 0)
        assert await purge(session, now=clock.now() + KEEP_ENDED - dt.timedelta(seconds=1)) == (
            0,
            0,
        )
    clock.advance(KEEP_ENDED.total_seconds())
    async with runtime.db.transaction() as session:
        assert await purge(session, now=clock.now()) == (1, 0)
    assert await ended_rows(runtime) == 1
    clock.advance(3600)
    async with runtime.db.transaction() as session:
        assert await purge(session, now=clock.now()) == (1, 0)
    assert await ended_rows(runtime) == 0
