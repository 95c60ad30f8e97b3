"""Signed-in console over HTTP: the session cookie, role and CSRF refusals, tenants apart."""

from __future__ import annotations

import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy import func, select

from switchboard.app import create_app
from switchboard.auth.models import ApiKey, User
from switchboard.platform.webhooks.models import Subscription
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.console.signin import console_clients, csrf_of, sign_in
from tests.factories import TenantFixture


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhook_allow_private": ("127.0.0.0/8",)})


async def _count(runtime: Runtime, model: type[ApiKey] | type[Subscription]) -> int:
    async with runtime.db.transaction(read_only=True) as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def test_signing_in_sets_a_sealed_session_cookie(browsers: dict[str, AsyncClient]) -> None:
    client = browsers["acme"]
    done = await sign_in(client)
    assert done.status_code == 303
    assert done.headers["location"] == "/admin/calls"
    cookies = done.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("sb_console="))
    for attribute in ("HttpOnly", "SameSite=lax", "Path=/admin", "Max-Age=28800"):
        assert attribute in session
    assert any(c.startswith("sb_console_login=") and "Max-Age=0" in c for c in cookies)
    page = await client.get("/admin/calls")
    assert page.status_code == 200
    assert '<span class="user">admin</span>' in page.text
    replayed = await client.get("/admin/callback", params={"code": "x", "state": "y"})
    assert replayed.status_code == 400  # the login's state was used up


async def test_non_admins_get_a_refusal_page_and_no_session(
    browsers: dict[str, AsyncClient], runtime: Runtime, acme: TenantFixture
) -> None:
    client = browsers["acme"]
    for username in ("power", "user"):
        refused = await sign_in(client, username, switch=True)
        assert refused.status_code == 403
        assert "Not allowed" in refused.text
        assert "admins only" in refused.text
        assert not any(c.startswith("sb_console=") for c in refused.headers.get_list("set-cookie"))
        assert "/admin/login?switch=1" in refused.text  # the way out: another user
        assert (await client.get("/admin/calls")).status_code == 303
    assert (await sign_in(client, switch=True)).status_code == 303
    async with runtime.db.transaction() as session:
        admin = await session.scalar(
            select(User).where(User.tenant_id == acme.id, User.username == "admin")
        )
        assert admin is not None
        admin.role = "power-user"  # demoted while signed in
    demoted = await client.get("/admin/calls")
    assert demoted.status_code == 403
    assert "Not allowed" in demoted.text


async def test_forms_without_the_sessions_csrf_token_change_nothing(
    browsers: dict[str, AsyncClient], runtime: Runtime
) -> None:
    client = browsers["acme"]
    await sign_in(client)
    page = await client.get("/admin/api-keys")
    token = csrf_of(page.text)
    for data in ({"name": "k"}, {"name": "k", "csrf": "forged"}, {"name": "k", "csrf": ""}):
        refused = await client.post("/admin/api-keys", data=data)
        assert refused.status_code == 403
        assert "csrf_failed" in refused.text
    header = await client.post("/admin/api-keys", data={"name": "k"}, headers={"X-CSRF-Token": "x"})
    assert header.status_code == 403
    hook = {"url": "http://127.0.0.1:9/hook", "events": "*"}
    assert (await client.post("/admin/webhooks", data=hook)).status_code == 403
    assert await _count(runtime, ApiKey) == 0
    assert await _count(runtime, Subscription) == 0
    minted = await client.post("/admin/api-keys", data={"name": "k", "csrf": token})
    assert minted.status_code == 303
    assert await _count(runtime, ApiKey) == 1
    other = browsers["globex"]
    await sign_in(other)
    stolen = await other.post("/admin/api-keys", data={"name": "k", "csrf": token})
    assert stolen.status_code == 403  # a token is good for its own session only


async def test_bad_input_is_a_clear_400_and_changes_nothing(
    browsers: dict[str, AsyncClient],
) -> None:
    client = browsers["acme"]
    await sign_in(client)
    token = csrf_of((await client.get("/admin/calls")).text)
    bad = await client.post(
        "/admin/calls",
        data={"csrf": token, "phone": "555", "email": "ops@acme.test", "apiKey": "k",
              "systemPrompt": "hi"},
    )  # fmt: skip
    assert bad.status_code == 400
    assert "phone" in bad.text
    assert "E.164" in bad.text
    listed = await client.get("/admin/calls")
    assert "No calls yet." in listed.text
    routes = await client.post(
        "/admin/routing/outbound", data={"csrf": token, "match": "+49*", "trunkIds": ""}
    )
    assert routes.status_code == 400
    assert "No outbound routes" in (await client.get("/admin/routing")).text


async def test_tenants_stay_apart_and_only_a_super_admin_switches(
    browsers: dict[str, AsyncClient],
) -> None:
    acme, globex = browsers["acme"], browsers["globex"]
    await sign_in(acme)
    await sign_in(globex)
    acme_token = csrf_of((await acme.get("/admin/webhooks")).text)
    created = await acme.post(
        "/admin/webhooks",
        data={"csrf": acme_token, "url": "http://127.0.0.1:9/acmeonly", "events": ["*"]},
    )
    assert created.status_code == 303
    page = (await acme.get(created.headers["location"])).text
    sub_id = page.split('data-subscription="', 1)[1].split('"', 1)[0]
    assert "acmeonly" not in (await globex.get("/admin/webhooks")).text
    assert (await globex.get(f"/admin/webhooks/{sub_id}")).status_code == 404
    globex_token = csrf_of((await globex.get("/admin/webhooks")).text)
    deleted = await globex.post(f"/admin/webhooks/{sub_id}/delete", data={"csrf": globex_token})
    assert deleted.status_code == 404
    switched = await globex.post("/admin/tenant", data={"csrf": globex_token, "tenant": "acme"})
    assert switched.status_code == 403
    assert "acmeonly" not in (await globex.get("/admin/webhooks")).text

    # The primary tenant's admin acts on globex, and back.
    moved = await acme.post("/admin/tenant", data={"csrf": acme_token, "tenant": "globex"})
    assert moved.status_code == 303
    hooks = (await acme.get("/admin/webhooks")).text
    assert 'value="globex"' in hooks
    assert "acmeonly" not in hooks
    back = await acme.post("/admin/tenant", data={"csrf": acme_token, "tenant": "acme"})
    assert back.status_code == 303
    assert "acmeonly" in (await acme.get("/admin/webhooks")).text
    unknown = await acme.post("/admin/tenant", data={"csrf": acme_token, "tenant": "nope"})
    assert unknown.status_code == 404


async def test_a_new_password_ends_the_sessions_held_with_the_old_one(
    runtime: Runtime, acme: TenantFixture
) -> None:
    """A password reset ends the user's web app sessions (their cookies carry a stamp of the
    password) and the identity provider's memory of the browser: signing in again asks for
    the new password."""
    await console_clients(runtime, acme)
    app = create_app(runtime=runtime)
    async with runtime.lifespan():
        transport = ASGITransport(app=app)
        async with (
            AsyncClient(transport=transport, base_url=f"http://{acme.host}") as thief,
            AsyncClient(transport=transport, base_url=f"http://{acme.host}") as admin,
        ):
            assert (await sign_in(thief, "power", mount="/app")).status_code == 303
            assert (await thief.get("/app/properties")).status_code == 200
            assert (await sign_in(admin)).status_code == 303
            page = await admin.get("/admin/users")
            reset = await admin.post(
                "/admin/users/power/password", data={"csrf": csrf_of(page.text)}
            )
            assert reset.status_code == 303
            stale = await thief.get("/app/properties")
            assert stale.status_code == 303
            assert stale.headers["location"] == "/app/login?next=%2Fapp%2Fproperties"
            # The provider no longer remembers the browser: its login form comes back.
            start = await thief.get("/app/login")
            authorize = await thief.get(start.headers["location"].split(acme.host, 1)[1])
            assert authorize.status_code == 200
            assert 'name="password"' in authorize.text
