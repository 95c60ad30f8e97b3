"""Ending one session of a user (decision 0605): an admin lists the user's identity provider
sessions on the console and ends one; the web app sessions signed in through it, in the console
and the linen app, are refused on their next request and that browser is asked for the password
again, while the user's other browser goes on."""

from __future__ import annotations

import re

import orjson
from httpx import ASGITransport, AsyncClient

from switchboard.identity import sessions
from switchboard.kit.crypto import SecretBox
from switchboard.runtime import Runtime
from switchboard.web.cookies import CONSOLE_COOKIE
from tests.console.signin import console_clients, csrf_of, sign_in
from tests.factories import TenantFixture
from tests.web.test_sign_out_everywhere import asks_for_the_password, assert_signed_out

CONSOLE_PAGE = "/admin/calls"
LINEN_PAGE = "/app/properties"


def browser(transport: ASGITransport, host: str, agent: str = "test browser") -> AsyncClient:
    return AsyncClient(
        transport=transport, base_url=f"http://{host}", headers={"user-agent": agent}
    )


async def live_sids(runtime: Runtime, tenant: TenantFixture, username: str) -> list[str]:
    async with runtime.db.transaction(read_only=True) as session:
        found = await sessions.list_sessions(
            session, tenant_id=tenant.id, username=username, clock=runtime.clock
        )
    return [row.sid for row in found]


def listed(page: str) -> list[str]:
    """The sids of a Sessions page, in their order."""
    return re.findall(r'<tr data-sid="([^"]+)"', page)


async def end(client: AsyncClient, username: str, sid: str, token: str | None) -> int:
    data = {"csrf": token} if token is not None else {}
    answer = await client.post(f"/admin/users/{username}/sessions/{sid}/end", data=data)
    return answer.status_code


async def test_an_admin_ends_one_of_two_sessions(
    transport: ASGITransport, acme: TenantFixture, runtime: Runtime
) -> None:
    async with (
        browser(transport, acme.host, "Laptop/1.0") as laptop,
        browser(transport, acme.host, "Phone/2.0") as phone,
        browser(transport, acme.host) as chief,
    ):
        for client in (laptop, phone):
            assert (await sign_in(client, "admin")).status_code == 303
            assert (await sign_in(client, "admin", mount="/app")).status_code == 303
        assert (await sign_in(chief, "chief")).status_code == 303
        newest, oldest = await live_sids(runtime, acme, "admin")  # the phone signed in last

        page = await chief.get("/admin/users/admin/sessions")
        assert page.status_code == 200
        assert listed(page.text) == [newest, oldest]
        assert "Phone/2.0" in page.text
        assert "Laptop/1.0" in page.text
        assert "127.0.0.1" in page.text  # the peer, as no trusted proxy is configured
        assert 'href="/admin/users/admin/sessions"' in (await chief.get("/admin/users")).text

        token = csrf_of(page.text)
        done = await chief.post(f"/admin/users/admin/sessions/{oldest}/end", data={"csrf": token})
        assert (done.status_code, done.headers["location"]) == (303, "/admin/users/admin/sessions")
        shown = await chief.get("/admin/users/admin/sessions")
        assert f"Session {oldest} of admin ended" in shown.text
        assert listed(shown.text) == [newest]
        again = await chief.get("/admin/users/admin/sessions")
        assert "ended" not in again.text  # shown once

        # The laptop's console and linen sessions end; the provider asks it for the password.
        await assert_signed_out(laptop, CONSOLE_PAGE, "/admin")
        await assert_signed_out(laptop, LINEN_PAGE, "/app")
        assert await asks_for_the_password(laptop, "/admin")
        # The phone, and the admin who pressed the button, go on.
        assert (await phone.get(CONSOLE_PAGE)).status_code == 200
        assert (await phone.get(LINEN_PAGE)).status_code == 200
        assert (await chief.get(CONSOLE_PAGE)).status_code == 200
        assert not await asks_for_the_password(phone, "/admin")
        # Ending it twice is no error; the laptop signs in again with the password.
        assert await end(chief, "admin", oldest, token) == 303
        assert (await sign_in(laptop, "admin")).status_code == 303
        assert (await laptop.get(CONSOLE_PAGE)).status_code == 200


async def test_another_users_or_tenants_session_is_not_found(
    transport: ASGITransport, acme: TenantFixture, globex: TenantFixture, runtime: Runtime
) -> None:
    async with (
        browser(transport, acme.host) as user,
        browser(transport, globex.host) as foreign,
        browser(transport, acme.host) as chief,
    ):
        await console_clients(runtime, globex)
        assert (await sign_in(user, "admin")).status_code == 303
        assert (await sign_in(foreign, "admin")).status_code == 303
        assert (await sign_in(chief, "chief")).status_code == 303
        (mine,) = await live_sids(runtime, acme, "admin")
        (theirs,) = await live_sids(runtime, globex, "admin")
        token = csrf_of((await chief.get("/admin/users")).text)

        for username, sid in (("admin", theirs), ("power", mine), ("nobody", mine)):
            answer = await chief.post(
                f"/admin/users/{username}/sessions/{sid}/end", data={"csrf": token}
            )
            assert answer.status_code == 404
            assert answer.headers["content-type"].startswith("text/html")
        assert (await chief.get("/admin/users/nobody/sessions")).status_code == 404
        assert (await chief.get("/admin/users/power/sessions")).status_code == 200
        assert await live_sids(runtime, acme, "admin") == [mine]
        assert await live_sids(runtime, globex, "admin") == [theirs]
        assert (await user.get(CONSOLE_PAGE)).status_code == 200
        assert (await foreign.get(CONSOLE_PAGE)).status_code == 200


async def test_a_non_admin_and_a_post_without_csrf_are_refused(
    transport: ASGITransport, acme: TenantFixture, runtime: Runtime
) -> None:
    async with browser(transport, acme.host) as user, browser(transport, acme.host) as power:
        assert (await sign_in(user, "admin")).status_code == 303
        (sid,) = await live_sids(runtime, acme, "admin")
        # A power user has no console session: the console sends them to sign in, where the
        # role is refused; the linen app's cookie is not the console's.
        refused = await sign_in(power, "power")
        assert refused.status_code == 403
        assert (await sign_in(power, "power", mount="/app")).status_code == 303
        listing = await power.get("/admin/users/admin/sessions")
        assert listing.status_code == 303
        assert listing.headers["location"].startswith("/admin/login")
        assert await end(power, "admin", sid, "forged") == 303  # to sign in, nothing ended
        # An admin's post without the CSRF token (or a wrong one) is refused.
        assert await end(user, "admin", sid, None) == 403
        assert await end(user, "admin", sid, "wrong") == 403
        assert await live_sids(runtime, acme, "admin") == [sid]


async def test_an_admin_ending_their_own_session_signs_in_again(
    transport: ASGITransport, acme: TenantFixture, runtime: Runtime
) -> None:
    async with browser(transport, acme.host) as client:
        assert (await sign_in(client, "admin")).status_code == 303
        (sid,) = await live_sids(runtime, acme, "admin")
        page = await client.get("/admin/users/admin/sessions")
        assert "(this session)" in page.text
        token = csrf_of(page.text)
        boosted = await client.post(
            f"/admin/users/admin/sessions/{sid}/end", data={"csrf": token},
            headers={"hx-request": "true", "x-csrf-token": token},
        )  # fmt: skip
        assert (boosted.status_code, boosted.headers["hx-redirect"]) == (
            204, "/admin/users/admin/sessions",
        )  # fmt: skip
        landed = await client.get("/admin/users/admin/sessions")
        assert landed.status_code == 303
        assert landed.headers["location"].startswith("/admin/login?next=")
        assert await asks_for_the_password(client, "/admin")


async def test_a_cookie_from_before_the_upgrade_signs_in_once_more(
    transport: ASGITransport, acme: TenantFixture, runtime: Runtime
) -> None:
    """A console cookie sealed before revision 0020 names no provider session: it is no
    session, as a cookie without a session id was after revision 0018 (decision 0603)."""
    box = SecretBox(runtime.settings.secret_key, purpose="console-cookies")  # as the jar's
    async with browser(transport, acme.host) as client:
        assert (await sign_in(client, "admin")).status_code == 303
        assert (await client.get(CONSOLE_PAGE)).status_code == 200
        raw = client.cookies.get(CONSOLE_COOKIE, path="/admin")
        assert raw is not None
        fields = orjson.loads(box.open(raw.strip('"')))  # the header quotes it
        assert fields.pop("idp_sid") in await live_sids(runtime, acme, "admin")
        client.cookies.set(CONSOLE_COOKIE, box.seal(orjson.dumps(fields).decode()), path="/admin")
        await assert_signed_out(client, CONSOLE_PAGE, "/admin")
