"""Signing a user out everywhere (decision 0604): every web app session of theirs, in every
browser, is refused on its next request, the identity provider asks for the password again and
their refresh tokens are refused; other users go on, and so does the password."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from httpx import ASGITransport, AsyncClient
from starlette.responses import Response

from switchboard.auth.models import User, credential_stamp
from switchboard.identity import service as identity
from switchboard.identity import sessions
from switchboard.kit.crypto import sha256_hex
from switchboard.runtime import Runtime
from switchboard.web.cookies import (
    CONSOLE_COOKIE,
    SESSION_SECONDS,
    CookieJar,
    WebSession,
    new_csrf,
    new_sid,
)
from tests.console.signin import csrf_of, sign_in
from tests.factories import PASSWORD, TenantFixture

CONSOLE_PAGE = "/admin/calls"
LINEN_PAGE = "/app/properties"


def browser(transport: ASGITransport, acme: TenantFixture) -> AsyncClient:
    return AsyncClient(transport=transport, base_url=f"http://{acme.host}")


async def refresh_token(client: AsyncClient, username: str) -> str:
    issued = await client.post(
        "/oidc.ashx/token",
        data={
            "grant_type": "password", "client_id": "cli", "username": username,
            "password": PASSWORD, "scope": "openid offline_access",
        },
    )  # fmt: skip
    assert issued.status_code == 200, issued.text
    token: str = issued.json()["refresh_token"]
    return token


async def refreshed(client: AsyncClient, token: str) -> int:
    answer = await client.post(
        "/oidc.ashx/token",
        data={"grant_type": "refresh_token", "client_id": "cli", "refresh_token": token},
    )
    return answer.status_code


async def assert_signed_out(client: AsyncClient, page: str, mount: str) -> None:
    stale = await client.get(page)
    assert stale.status_code == 303
    assert stale.headers["location"].startswith(f"{mount}/login?next=")


async def asks_for_the_password(client: AsyncClient, mount: str) -> bool:
    """Whether the provider shows its login page to this browser (rather than answering at once
    for a user it remembers)."""
    start = await client.get(f"{mount}/login")
    authorize = urlsplit(start.headers["location"])
    page = await client.get(f"{authorize.path}?{authorize.query}")
    return page.status_code == 200 and 'name="password"' in page.text


async def test_the_consoles_button_ends_every_session_of_one_user(
    transport: ASGITransport, acme: TenantFixture
) -> None:
    async with (
        browser(transport, acme) as console,
        browser(transport, acme) as linen,
        browser(transport, acme) as other,
        browser(transport, acme) as chief,
    ):
        assert (await sign_in(console, "admin")).status_code == 303
        assert (await sign_in(linen, "admin", mount="/app")).status_code == 303
        assert (await sign_in(other, "power", mount="/app")).status_code == 303
        assert (await sign_in(chief, "chief")).status_code == 303
        kept = await refresh_token(chief, "admin")
        others = await refresh_token(chief, "power")

        token = csrf_of((await chief.get("/admin/users")).text)
        done = await chief.post("/admin/users/admin/sign-out-everywhere", data={"csrf": token})
        assert (done.status_code, done.headers["location"]) == (303, "/admin/users")
        shown = await chief.get("/admin/users")
        assert "admin is signed out everywhere" in shown.text
        assert "admin is signed out everywhere" not in (await chief.get("/admin/users")).text

        await assert_signed_out(console, CONSOLE_PAGE, "/admin")
        await assert_signed_out(linen, LINEN_PAGE, "/app")
        assert await refreshed(chief, kept) == 400
        # Another user's sessions and tokens go on, and so does the admin who pressed it.
        assert (await other.get(LINEN_PAGE)).status_code == 200
        assert await refreshed(chief, others) == 200
        assert (await chief.get(CONSOLE_PAGE)).status_code == 200

        # The provider forgot both browsers; the password is the same as before.
        assert await asks_for_the_password(console, "/admin")
        assert await asks_for_the_password(linen, "/app")
        assert (await sign_in(console, "admin")).status_code == 303
        assert (await console.get(CONSOLE_PAGE)).status_code == 200
        assert (await sign_in(linen, "admin", mount="/app")).status_code == 303
        assert (await linen.get(LINEN_PAGE)).status_code == 200
        assert await refreshed(chief, await refresh_token(chief, "admin")) == 200


async def test_an_admin_may_sign_themselves_out_everywhere(
    transport: ASGITransport, acme: TenantFixture
) -> None:
    async with browser(transport, acme) as tab, browser(transport, acme) as boosted:
        for client in (tab, boosted):
            assert (await sign_in(client, "chief")).status_code == 303
        token = csrf_of((await tab.get("/admin/users")).text)
        done = await tab.post("/admin/users/chief/sign-out-everywhere", data={"csrf": token})
        assert (done.status_code, done.headers["location"]) == (303, "/admin/users")
        landed = await tab.get("/admin/users")
        assert landed.status_code == 303
        assert landed.headers["location"] == "/admin/login?next=%2Fadmin%2Fusers"
        await assert_signed_out(boosted, CONSOLE_PAGE, "/admin")
        assert await asks_for_the_password(tab, "/admin")

        # An htmx post is told to load the page whole: the sign-in is not swapped into a page.
        assert (await sign_in(boosted, "chief")).status_code == 303
        token = csrf_of((await boosted.get("/admin/users")).text)
        done = await boosted.post(
            "/admin/users/chief/sign-out-everywhere",
            data={"csrf": token},
            headers={"HX-Request": "true"},
        )
        assert (done.status_code, done.headers["HX-Redirect"]) == (204, "/admin/users")
        await assert_signed_out(boosted, CONSOLE_PAGE, "/admin")


async def test_the_button_needs_the_sessions_csrf_token_and_a_user(
    transport: ASGITransport, acme: TenantFixture
) -> None:
    async with browser(transport, acme) as chief, browser(transport, acme) as console:
        assert (await sign_in(chief, "chief")).status_code == 303
        assert (await sign_in(console, "admin")).status_code == 303
        for data in ({}, {"csrf": "forged"}):
            refused = await chief.post("/admin/users/admin/sign-out-everywhere", data=data)
            assert refused.status_code == 403
            assert "csrf_failed" in refused.text
        token = csrf_of((await chief.get("/admin/users")).text)
        unknown = await chief.post("/admin/users/nobody/sign-out-everywhere", data={"csrf": token})
        assert unknown.status_code == 404
        assert (await console.get(CONSOLE_PAGE)).status_code == 200


def sealed_before_the_stamp(runtime: Runtime, acme: TenantFixture, user: User, idp_sid: str) -> str:
    """A console session cookie as the version before the security stamp sealed it: its stamp
    is the digest of the password hash alone (made from the provider session ``idp_sid``, as
    every cookie is since revision 0020, decision 0605)."""
    jar = CookieJar(runtime.settings.secret_key, name=CONSOLE_COOKIE, path="/admin", secure=False)
    now = int(runtime.clock.now().timestamp())
    old = WebSession(
        user_id=user.id, tenant_id=acme.id, acting_tenant_id=acme.id, csrf=new_csrf(),
        expires=now + SESSION_SECONDS, id_token="", stamp=sha256_hex(user.password_hash)[:16],
        sid=new_sid(), idp_sid=idp_sid,
    )  # fmt: skip
    response = Response()
    jar.set_session(response, old)
    return response.headers["set-cookie"].split(";")[0].partition("=")[2]


async def test_sessions_signed_in_before_the_upgrade_go_on(
    transport: ASGITransport, acme: TenantFixture, runtime: Runtime
) -> None:
    """A user never signed out everywhere has an empty security stamp: the cookies sealed
    before the stamp existed still hold, so an upgrade ends no session; signing the user out
    everywhere ends them too."""
    async with runtime.db.transaction(read_only=True) as session:
        user = await identity.get_user(session, tenant_id=acme.id, username="admin")
    assert user.security_stamp == ""
    assert credential_stamp(user) == sha256_hex(user.password_hash)[:16]
    stamped = User(password_hash=user.password_hash, security_stamp="x")
    assert credential_stamp(stamped) != credential_stamp(user)

    async with browser(transport, acme) as client:
        assert (await sign_in(client, "admin")).status_code == 303
        async with runtime.db.transaction(read_only=True) as session:
            idp_sid = (await sessions.list_sessions(
                session, tenant_id=acme.id, username="admin", clock=runtime.clock
            ))[0].sid  # fmt: skip
        client.cookies.set(
            CONSOLE_COOKIE, sealed_before_the_stamp(runtime, acme, user, idp_sid), path="/admin"
        )
        assert (await client.get(CONSOLE_PAGE)).status_code == 200
        async with runtime.db.transaction() as session:
            await identity.sign_out_everywhere(
                session, tenant_id=acme.id, username="admin", clock=runtime.clock
            )
        await assert_signed_out(client, CONSOLE_PAGE, "/admin")


@pytest.mark.parametrize(
    ("mount", "page", "username"),
    [("/admin", CONSOLE_PAGE, "chief"), ("/app", LINEN_PAGE, "power")],
    ids=["console", "linen"],
)
async def test_a_user_signs_themselves_out_everywhere_from_the_header(
    transport: ASGITransport, acme: TenantFixture, mount: str, page: str, username: str
) -> None:
    """The header's "Sign out everywhere" ends this session, the user's sessions in every other
    browser and their refresh tokens; other users go on."""
    async with (
        browser(transport, acme) as here,
        browser(transport, acme) as there,
        browser(transport, acme) as other,
    ):
        assert (await sign_in(here, username, mount=mount)).status_code == 303
        assert (await sign_in(there, username, mount=mount)).status_code == 303
        assert (await sign_in(other, "admin")).status_code == 303
        theirs, admins = await refresh_token(other, username), await refresh_token(other, "admin")

        shown = (await here.get(page)).text
        assert 'name="everywhere" value="1"' in shown
        out = await here.post(f"{mount}/logout", data={"csrf": csrf_of(shown), "everywhere": "1"})
        assert out.status_code == 303
        assert "end_session" in out.headers["location"]

        await assert_signed_out(here, page, mount)
        await assert_signed_out(there, page, mount)
        assert await asks_for_the_password(there, mount)
        assert await refreshed(other, theirs) == 400
        assert (await other.get(CONSOLE_PAGE)).status_code == 200
        assert await refreshed(other, admins) == 200


async def test_a_plain_sign_out_ends_only_this_browser(
    transport: ASGITransport, acme: TenantFixture
) -> None:
    async with browser(transport, acme) as here, browser(transport, acme) as there:
        assert (await sign_in(here, "power", mount="/app")).status_code == 303
        assert (await sign_in(there, "power", mount="/app")).status_code == 303
        token = csrf_of((await here.get(LINEN_PAGE)).text)
        assert (await here.post("/app/logout", data={"csrf": token})).status_code == 303
        await assert_signed_out(here, LINEN_PAGE, "/app")
        assert (await there.get(LINEN_PAGE)).status_code == 200
