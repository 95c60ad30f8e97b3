"""In Debian's chromium against a real server: sign in through the login page, then open a
transcript share from a fresh browser context whose hostile turn must stay inert."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from switchboard.app import create_app
from switchboard.identity import clients
from switchboard.identity import service as identity
from switchboard.kit.clock import SystemClock
from switchboard.platform.transcripts.service import Turn, save_transcript
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants
from tests import ports
from tests.asgiserve import serving_in_thread
from tests.browser import ARGS, CHROMIUM, HTTP_TIMEOUT, needs_chromium
from tests.factories import PASSWORD
from tests.transcripts.helpers import T0, outbound

HOSTILE = '<script>alert("pwned")</script><img src=x onerror="alert(2)">'
VERIFIER = "browser-verifier-" + "q" * 40

pytestmark = [pytest.mark.slow, needs_chromium]


@dataclass
class Server:
    base: str
    settings: Settings


async def _seed(settings: Settings, host: str) -> None:
    runtime = Runtime(settings, clock=SystemClock())
    async with runtime.db.transaction() as session:
        tenant = await tenants.create_tenant(
            session, name="acme", domains=[host], clock=runtime.clock, box=runtime.box
        )
        await identity.create_user(
            session, tenant=tenant, username="admin", password=PASSWORD, role="admin",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        await clients.ensure_console_client(
            session, tenant=tenant, base_url=f"http://{host}", clock=runtime.clock
        )
        turns = [Turn("AI", "Hello from Acme.", T0), Turn("Caller", HOSTILE, T0)]
        await save_transcript(
            session, tenant_id=tenant.id, tenant_name="acme",
            data=outbound("oac-b10e50000001", turns=turns),
            data_dir=settings.data_dir, clock=runtime.clock,
        )  # fmt: skip
    await runtime.db.dispose()


@pytest.fixture
def server(settings: Settings) -> Iterator[Server]:
    port = ports.free_port()
    host = f"127.0.0.1:{port}"
    live = settings.model_copy(update={"public_base_url": f"http://{host}"})
    asyncio.run(_seed(live, host))
    with serving_in_thread(create_app(live), port):
        yield Server(base=f"http://{host}", settings=live)


def _authorize_url(base: str, **extra: str) -> str:
    digest = hashlib.sha256(VERIFIER.encode()).digest()
    params = {
        "response_type": "code",
        "client_id": "console",
        "redirect_uri": f"{base}/admin/callback",
        "scope": "openid",
        "state": "browser-state",
        "nonce": "browser-nonce",
        "code_challenge": base64.urlsafe_b64encode(digest).rstrip(b"=").decode(),
        "code_challenge_method": "S256",
        **extra,
    }
    return f"{base}/oidc.ashx/authorize?{urlencode(params)}"


def test_sign_in_then_open_a_share_in_a_fresh_context(server: Server) -> None:
    from playwright.sync_api import Dialog, sync_playwright

    base = server.base
    callback = f"{base}/admin/callback"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        context = browser.new_context()
        page = context.new_page()
        page.goto(_authorize_url(base))
        assert page.locator("h2").inner_text() == "Sign in to acme"
        page.fill("#username", "admin")
        page.fill("#password", "wrong password!")
        page.click("button[type=submit]")
        assert "Invalid username or password." in page.locator(".error").inner_text()
        page.fill("#password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{callback}?*", timeout=10_000)
        params = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
        assert params["state"] == "browser-state"
        cookies = {c["name"]: c for c in context.cookies()}
        assert cookies["sb_idp_session"]["httpOnly"] is True
        assert cookies["sb_idp_session"]["sameSite"] == "Lax"

        token = httpx.post(
            f"{base}/oidc.ashx/token",
            data={
                "grant_type": "authorization_code",
                "client_id": "console",
                "code": params["code"],
                "redirect_uri": callback,
                "code_verifier": VERIFIER,
            },
            timeout=HTTP_TIMEOUT,
        ).json()
        bearer = {"Authorization": f"Bearer {token['access_token']}"}
        # Signed in: the next authorization goes straight back with a code.
        page.goto(_authorize_url(base, state="again"))
        page.wait_for_url(f"{callback}?*", timeout=10_000)
        assert "state=again" in page.url

        share = httpx.post(
            f"{base}/api.ashx/v1/transcripts/oac-b10e50000001/shares",
            json={"ttlHours": 1},
            headers=bearer,
            timeout=HTTP_TIMEOUT,
        ).json()
        assert share["url"].startswith(f"{base}/share/")

        stranger = browser.new_context()  # no cookies, no session
        dialogs: list[str] = []
        viewer = stranger.new_page()

        def dismissed(dialog: Dialog) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        viewer.on("dialog", dismissed)
        viewer.goto(share["url"])
        turns = viewer.locator(".turn p").all_inner_texts()
        assert turns == ["Hello from Acme.", HOSTILE]
        assert viewer.locator(".turns img").count() == 0
        assert viewer.evaluate("document.querySelectorAll('.turns script').length") == 0
        # The page is fully loaded (goto waits for "load"): an injected handler would have fired.
        assert dialogs == []
        browser.close()
