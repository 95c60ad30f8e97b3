"""The console's one-time results over HTTP (decision 0602): a post that makes a secret answers
303, the page it names shows the secret once, and a reload shows the plain page and makes
nothing new. The flash cookie is sealed, short-lived and good for its own session only."""

from __future__ import annotations

import re

import pytest
from httpx import AsyncClient, Response
from sqlalchemy import select
from starlette.responses import Response as StarletteResponse

from switchboard.kit.clock import ManualClock
from switchboard.platform.transcripts.service import save_transcript
from switchboard.platform.webhooks.models import Subscription
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.web.cookies import CookieJar, Flash
from tests.console.signin import csrf_of, sign_in
from tests.factories import PASSWORD, TenantFixture
from tests.transcripts.helpers import outbound

FLASH = "sb_console_flash"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhook_allow_private": ("127.0.0.0/8",)})


def secret_of(page: str) -> str | None:
    found = re.search(r"data-secret>([^<]+)<", page)
    return found.group(1) if found else None


def flash_set(response: Response) -> str:
    """The flash cookie the response sets (its whole ``Set-Cookie`` line)."""
    return next(c for c in response.headers.get_list("set-cookie") if c.startswith(f"{FLASH}="))


def flash_expired(response: Response) -> bool:
    return any(
        c.startswith(f"{FLASH}=") and "Max-Age=0" in c
        for c in response.headers.get_list("set-cookie")
    )


async def test_a_minted_key_is_shown_once_and_a_reload_mints_nothing(
    two: list[AsyncClient],
) -> None:
    client = two[0]
    await sign_in(client)
    token = csrf_of((await client.get("/admin/api-keys")).text)
    minted = await client.post("/admin/api-keys", data={"name": "billing", "csrf": token})
    assert minted.status_code == 303
    assert minted.headers["location"] == "/admin/api-keys"
    cookie = flash_set(minted)
    for attribute in ("HttpOnly", "SameSite=lax", "Path=/admin", "Max-Age=300"):
        assert attribute in cookie
    assert "Secure" not in cookie  # plain http here
    shown = await client.get("/admin/api-keys")
    assert shown.status_code == 200
    assert shown.headers["cache-control"] == "no-store"
    key = secret_of(shown.text)
    assert key is not None
    assert key.startswith("ak_")
    assert key not in cookie  # sealed: the browser cannot read it
    assert "(billing) minted." in shown.text
    assert flash_expired(shown)
    reloaded = await client.get("/admin/api-keys")
    assert reloaded.status_code == 200
    assert secret_of(reloaded.text) is None
    assert "minted." not in reloaded.text
    assert reloaded.text.count("<tr data-key=") == 1  # the reload minted no second key
    assert not flash_expired(reloaded)  # nothing left to expire
    used = await client.get("/api.ashx/v1/calls", headers={"Authorization": f"Bearer {key}"})
    assert used.status_code == 200


async def test_a_reset_password_is_shown_once_and_a_reload_resets_nothing(
    two: list[AsyncClient], acme: TenantFixture
) -> None:
    client = two[0]
    await sign_in(client)
    token = csrf_of((await client.get("/admin/users")).text)
    reset = await client.post("/admin/users/power/password", data={"csrf": token})
    assert reset.status_code == 303
    assert reset.headers["location"] == "/admin/users"
    shown = await client.get("/admin/users")
    password = secret_of(shown.text)
    assert password is not None
    assert "The password of power was reset" in shown.text
    reloaded = await client.get("/admin/users")
    assert secret_of(reloaded.text) is None
    assert "was reset" not in reloaded.text
    # The password shown still works: the reload did not reset it again.
    granted = await client.post(
        "/oidc.ashx/token",
        data={"grant_type": "password", "client_id": "cli", "username": "power",
              "password": password},
        headers={"Host": acme.host},
    )  # fmt: skip
    assert granted.status_code == 200, granted.text
    created = await client.post(
        "/admin/users",
        data={"csrf": token, "username": "sam", "password": PASSWORD, "role": "user"},
    )
    assert created.status_code == 303
    assert "User sam created." in (await client.get("/admin/users")).text
    assert "User sam created." not in (await client.get("/admin/users")).text


async def test_a_share_link_is_shown_once_and_a_reload_makes_no_second_link(
    two: list[AsyncClient], runtime: Runtime, acme: TenantFixture
) -> None:
    async with runtime.db.transaction() as session:
        await save_transcript(
            session, tenant_id=acme.id, tenant_name=acme.name, data=outbound(),
            data_dir=runtime.settings.data_dir, clock=runtime.clock,
        )  # fmt: skip
    client = two[0]
    await sign_in(client)
    page = f"/admin/transcripts/{outbound().call_id}"
    token = csrf_of((await client.get(page)).text)
    made = await client.post(f"{page}/shares", data={"csrf": token, "ttlHours": "0"})
    assert made.status_code == 303
    assert made.headers["location"] == page
    shown = await client.get(page)
    url = secret_of(shown.text)
    assert url is not None
    assert "/share/" in url
    assert "it never expires" in shown.text
    reloaded = await client.get(page)
    assert secret_of(reloaded.text) is None
    assert reloaded.text.count("<tr data-share=") == 1  # no second link
    public = await client.get(url.split(acme.host, 1)[1])
    assert public.status_code == 200


async def test_a_webhook_secret_is_shown_once_and_a_reload_makes_no_second_subscription(
    two: list[AsyncClient], runtime: Runtime
) -> None:
    client = two[0]
    await sign_in(client)
    token = csrf_of((await client.get("/admin/webhooks")).text)
    form = {"csrf": token, "url": "http://127.0.0.1:9/h", "events": ["call.ended"]}
    made = await client.post("/admin/webhooks", data=form)
    assert made.status_code == 303
    assert made.headers["location"] == "/admin/webhooks"
    shown = await client.get("/admin/webhooks")
    secret = secret_of(shown.text)
    assert secret is not None
    assert secret.startswith("whsec_")
    assert secret not in flash_set(made)
    assert "created for http://127.0.0.1:9/h" in shown.text
    reloaded = await client.get("/admin/webhooks")
    assert secret_of(reloaded.text) is None
    assert "created for" not in reloaded.text
    assert reloaded.text.count("<tr data-subscription=") == 1  # no second subscription
    # made, then deleted in another tab before its page was shown: the plain page, no secret
    first = reloaded.text.split('<tr data-subscription="', 1)[1].split('"', 1)[0]
    assert (await client.post("/admin/webhooks", data=form)).status_code == 303
    async with runtime.db.transaction(read_only=True) as session:
        ids = set(await session.scalars(select(Subscription.id)))
    (second,) = ids - {first}
    gone = await client.post(f"/admin/webhooks/{second}/delete", data={"csrf": token})
    assert gone.status_code == 303
    after = await client.get("/admin/webhooks")
    assert after.status_code == 200
    assert secret_of(after.text) is None
    assert flash_expired(after)


async def test_a_flash_of_another_session_or_out_of_date_is_ignored(
    two: list[AsyncClient], clock: ManualClock
) -> None:
    first, second = two
    await sign_in(first)
    await sign_in(second)  # the same admin, in another browser: another session
    token = csrf_of((await first.get("/admin/api-keys")).text)
    minted = await first.post("/admin/api-keys", data={"name": "mine", "csrf": token})
    assert minted.status_code == 303
    sealed = first.cookies.get(FLASH, path="/admin")
    assert sealed
    second.cookies.set(FLASH, sealed, domain=str(second.base_url.host), path="/admin")
    stolen = await second.get("/admin/api-keys")
    assert stolen.status_code == 200
    assert secret_of(stolen.text) is None
    assert flash_expired(stolen)  # of no use here: it goes
    second.cookies.set(FLASH, "not a sealed value", domain=str(second.base_url.host), path="/admin")
    forged = await second.get("/admin/api-keys")
    assert forged.status_code == 200
    assert secret_of(forged.text) is None
    own = await first.get("/admin/api-keys")  # the browser it was made for sees it
    assert secret_of(own.text) is not None
    # Another page of the console does not show it either, and a late one is gone.
    token = csrf_of(own.text)
    await first.post("/admin/api-keys", data={"name": "late", "csrf": token})
    assert secret_of((await first.get("/admin/users")).text) is None
    await first.post("/admin/api-keys", data={"name": "later", "csrf": token})
    clock.advance(301)
    late = await first.get("/admin/api-keys")
    assert secret_of(late.text) is None
    assert late.text.count("<tr data-key=") == 3


def test_behind_https_the_flash_is_secure() -> None:
    jar = CookieJar("k" * 32, name="sb_console", path="/admin", secure=True)
    response = StarletteResponse()
    jar.set_flash(response, Flash(page="/admin/api-keys", owner="x", expires=1, id="x"))
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{FLASH}=")
    for attribute in ("Secure", "HttpOnly", "SameSite=lax", "Path=/admin", "Max-Age=300"):
        assert attribute in cookie


async def test_a_flash_is_for_the_tenant_acted_on_when_it_was_made(
    browsers: dict[str, AsyncClient],
) -> None:
    """The super-admin resets a password of globex's and switches back to acme (in another tab)
    before the page comes: acme's users page does not show globex's password; acting on globex
    again within the flash's life, it is shown (the same session and tenant)."""
    client = browsers["acme"]  # acme is the primary tenant
    await sign_in(client)
    token = csrf_of((await client.get("/admin/users")).text)
    moved = await client.post("/admin/tenant", data={"csrf": token, "tenant": "globex"})
    assert moved.status_code == 303
    reset = await client.post("/admin/users/power/password", data={"csrf": token})
    assert reset.status_code == 303
    flash = client.cookies.get(FLASH, path="/admin")
    await client.post("/admin/tenant", data={"csrf": token, "tenant": "acme"})
    on_acme = await client.get("/admin/users")
    assert secret_of(on_acme.text) is None
    assert "was reset" not in on_acme.text
    assert flash_expired(on_acme)
    client.cookies.set(FLASH, flash or "", domain=str(client.base_url.host), path="/admin")
    await client.post("/admin/tenant", data={"csrf": token, "tenant": "globex"})
    on_globex = await client.get("/admin/users")
    assert secret_of(on_globex.text) is not None
    assert "The password of power was reset" in on_globex.text
