"""The console in Debian's chromium, against a real server: what an operator does, page by page.

Each test starts one browser, signs in through the identity provider's login page and
walks several flows, so that the suite stays quick. The pages run on SQLite only: what they
store goes through the same services whose HTTP tests run on SQLite and PostgreSQL
(test_console_session.py and each feature's own tests).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from switchboard.platform.transcripts.service import Turn, save_transcript
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.browser import ARGS, CHROMIUM, HTTP_TIMEOUT, needs_chromium
from tests.console.conftest import Receiver, run, serve
from tests.console.signin import console_clients
from tests.ports import free_port
from tests.transcripts.helpers import outbound

pytestmark = [pytest.mark.slow, needs_chromium]

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
TIMEOUT = 15_000


@dataclasses.dataclass
class World:
    base: str
    api_key: str
    acme: factories.TenantFixture


async def _seed(settings: Settings, port: int) -> World:
    runtime = Runtime(settings)
    try:
        acme = await factories.tenant(runtime, "acme", [f"127.0.0.1:{port}"])
        globex = await factories.tenant(runtime, "globex", [f"localhost:{port}"])
        await console_clients(runtime, acme, globex)
        key = await factories.api_key(runtime, acme)
        hostile = outbound(
            "oac-hostile00001",
            display_name=HOSTILE,
            turns=[Turn("Caller", HOSTILE, outbound().started)],
        )
        async with runtime.db.transaction() as session:
            await save_transcript(
                session, tenant_id=acme.id, tenant_name="acme", data=hostile,
                data_dir=settings.data_dir, clock=runtime.clock,
            )  # fmt: skip
    finally:
        await runtime.db.dispose()
    return World(base=settings.public_base_url, api_key=key, acme=acme)


@pytest.fixture
def db_url(sqlite_template: Path, tmp_path: Path) -> str:
    target = tmp_path / "switchboard.db"
    shutil.copyfile(sqlite_template, target)
    return f"sqlite+aiosqlite:///{target}"


@pytest.fixture
def world(settings: Settings) -> Iterator[World]:
    port = free_port()
    settings = settings.model_copy(
        update={
            "public_base_url": f"http://127.0.0.1:{port}",
            "run_workers": True,
            "sim_speed": 2000,
            "webhook_allow_private": ("127.0.0.0/8",),
        }
    )
    seeded = run(_seed(settings, port))
    assert isinstance(seeded, World)
    for _served in serve(settings):
        yield seeded


@pytest.fixture
def browser(world: World) -> Iterator[Any]:
    """Started after the server and its seed data: Playwright's sync API runs an event loop in
    this thread, and the seeding needs its own."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


def sign_in(page: Any, base: str, username: str = "admin") -> None:
    """Through the identity provider's own login page, as a person would."""
    page.goto(f"{base}/admin/")
    page.wait_for_selector('input[name="password"]', timeout=TIMEOUT)
    page.fill('input[name="username"]', username)
    page.fill('input[name="password"]', factories.PASSWORD)
    page.press('input[name="password"]', "Enter")


def fill(form: Any, values: dict[str, str]) -> None:
    """Type each value into the form's field of that name (or pick it, for a select)."""
    for name, value in values.items():
        field = form.locator(f'[name="{name}"]')
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)


def submit(page: Any, form: str, values: dict[str, str]) -> None:
    fill(page.locator(form), values)
    page.click(f"{form} button")


def watch_console(page: Any, errors: list[str]) -> None:
    """Script errors, CSP violations and failed loads; the browser's own favicon probe on the
    provider's login page (no response event, only a console line) is not the console's."""

    def on_console(message: Any) -> None:
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            errors.append(message.text)

    page.on("console", on_console)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: d.accept())


def test_calls_webhooks_keys_and_transcripts(
    world: World, browser: Any, receiver: Receiver
) -> None:
    from playwright.sync_api import Route, expect

    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    watch_console(page, errors)
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    sign_in(page, world.base)
    page.wait_for_url(f"{world.base}/admin/calls", timeout=TIMEOUT)
    cookie = next(c for c in context.cookies() if c["name"] == "sb_console")
    assert cookie["httpOnly"]
    assert cookie["sameSite"] == "Lax"
    assert cookie["path"] == "/admin"

    # Calls: place one with every field of spec 2.2, scheduled, so that it waits.
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
    form = page.locator("#place-call")
    fill(
        form,
        {
            "phone": "+14155550100", "displayName": "Dana Example", "email": "ops@acme.test",
            "model": "gemini-live-2.5-flash", "voice": "Kore", "language": "en-GB",
            "maxSeconds": "120", "retries": "2", "retryDelayMinutes": "7",
            "scheduleAtUtc": later.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "apiKey": "sk-engine-secret", "systemPrompt": "Remind Dana of the renewal.",
        },
    )  # fmt: skip
    form.locator("button").click()
    page.wait_for_url(re.compile(r"/admin/calls/oac-"), timeout=TIMEOUT)
    call_id = page.url.rsplit("/", 1)[1].split("?")[0]
    facts = page.locator("dl.facts").inner_text()
    for shown in ("scheduled", "Dana Example", "Kore / en-GB / gemini-live-2.5-flash", "2 retries"):
        assert shown in facts, facts
    assert "sk-engine-secret" not in page.content()

    # The list follows the call live: a hang-up made elsewhere (the REST API) arrives by SSE.
    page.goto(f"{world.base}/admin/calls")
    status = page.locator(f'[data-call-status="{call_id}"]')
    expect(status).to_have_text("scheduled")
    expect(page.locator("body")).to_have_attribute("data-live", "connected")
    hung = httpx.post(
        f"{world.base}/api.ashx/v1/calls/{call_id}/hangup",
        headers={"Authorization": f"Bearer {world.api_key}"},
        timeout=HTTP_TIMEOUT,
    )
    assert hung.status_code == 200, hung.text
    expect(status).to_have_text("cancelled", timeout=TIMEOUT)
    expect(status).to_have_attribute("data-updated", "live")
    # ended: the end time shows and the row's Hang up is gone, without a reload
    row = page.locator(f'tr[data-call="{call_id}"]')
    expect(row.locator("button", has_text="Hang up")).to_have_count(0)
    expect(page.locator(f'[data-call-ended="{call_id}"]')).to_have_text(re.compile(r"^\d{4}-"))

    # A hang-up made after the page was rendered but before its stream's first read still
    # arrives: the stream opens with the state of every listed call.
    api = {"Authorization": f"Bearer {world.api_key}"}
    placed = httpx.post(f"{world.base}/api.ashx/v1/calls", headers=api, json={
        "phone": "+14155550101", "email": "ops@acme.test", "apiKey": "sk-engine-secret",
        "systemPrompt": "Remind Dana of the renewal.",
        "scheduleAtUtc": later.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }, timeout=HTTP_TIMEOUT)  # fmt: skip
    assert placed.status_code == 200, placed.text
    early = placed.json()["callId"]

    def hang_up_first(route: Route) -> None:
        hung = httpx.post(
            f"{world.base}/api.ashx/v1/calls/{early}/hangup", headers=api, timeout=HTTP_TIMEOUT
        )
        assert hung.status_code == 200, hung.text
        route.continue_()

    page.route("**/admin/calls/live", hang_up_first)
    page.goto(f"{world.base}/admin/calls")
    early_status = page.locator(f'[data-call-status="{early}"]')
    expect(early_status).to_have_text("cancelled", timeout=TIMEOUT)
    page.unroute("**/admin/calls/live")
    page.goto(f"{world.base}/admin/calls/{call_id}")
    expect(page.locator("dl.facts")).to_contain_text("cancelled")
    assert page.locator("button", has_text="Hang up").count() == 0

    # A call placed now runs on the simulated bridge; its detail shows its events and transcript.
    page.goto(f"{world.base}/admin/calls")
    page.fill('#place-call [name="phone"]', "+14155550200")
    page.fill('#place-call [name="email"]', "ops@acme.test")
    page.fill('#place-call [name="apiKey"]', "sk-engine-secret")
    page.fill('#place-call [name="systemPrompt"]', "Say hello.")
    page.click("#place-call button")
    page.wait_for_url(re.compile(r"/admin/calls/oac-"), timeout=TIMEOUT)
    # The simulated call plays out after the commit: reload until its events are shown (the
    # status follows live, the events only on a load).
    for _ in range(75):
        if "transcript.saved" in page.locator("#events").inner_text():
            break
        page.wait_for_timeout(200)
        page.reload()
    expect(page.locator("#events")).to_contain_text("call.started")
    expect(page.locator("#events")).to_contain_text("transcript.saved")
    expect(page.locator("ol.turns li").first).to_contain_text("AI")

    # Webhooks: an event picker, the secret shown once, a test delivery and its log.
    page.goto(f"{world.base}/admin/webhooks")
    page.fill('#new-webhook [name="url"]', receiver.url)
    page.check('#new-webhook input[value="call.ended"]')
    page.check('#new-webhook input[value="transcript.saved"]')
    page.click("#new-webhook button")
    secret = page.locator("[data-secret]").inner_text()
    assert secret.startswith("whsec_"), secret
    row = page.locator("#subscriptions tbody tr").first
    expect(row).to_contain_text("call.ended, transcript.saved")
    row.locator("a").first.click()
    page.wait_for_url(re.compile(r"/admin/webhooks/[0-9a-f]{16}$"))
    assert secret not in page.content()
    page.click("text=Send webhook.test")
    expect(page.locator(".notice")).to_contain_text("webhook.test")
    attempt = page.locator("#attempts tbody tr").first
    for _ in range(50):  # the sender works after the commit: reload until its attempt is logged
        if "webhook.test" in attempt.inner_text():
            break
        page.wait_for_timeout(200)
        page.reload()
    expect(attempt).to_contain_text("200")
    expect(attempt).to_contain_text("received, thanks")
    assert any(b'"event":"webhook.test"' in body for body in receiver.bodies)
    attempt.locator("button", has_text="Redeliver").click()
    expect(page.locator(".notice")).to_contain_text("queued again")
    page.goto(f"{world.base}/admin/webhooks")
    assert page.locator("[data-secret]").count() == 0
    page.locator("#subscriptions button", has_text="Delete").click()
    expect(page.locator("#subscriptions")).to_contain_text("No subscriptions.")

    # API keys: minted and shown once, then revoked; a used key shows when it was last used.
    page.goto(f"{world.base}/admin/api-keys")
    page.fill('#mint-key [name="name"]', "billing")
    page.click("#mint-key button")
    minted = page.locator("[data-secret]").inner_text()
    assert minted.startswith("ak_")
    page.reload()  # asks for the page again: the key is not shown again, nor minted again
    assert page.locator("[data-secret]").count() == 0
    expect(page.locator("#keys tr", has_text="billing")).to_have_count(1)
    used = httpx.get(
        f"{world.base}/api.ashx/v1/calls",
        headers={"Authorization": f"Bearer {minted}"},
        timeout=HTTP_TIMEOUT,
    )
    assert used.status_code == 200
    page.goto(f"{world.base}/admin/api-keys")
    assert minted not in page.content()
    billing = page.locator("#keys tr", has_text="billing")
    expect(billing.locator(".last-used")).not_to_have_text("never")
    billing.locator("button", has_text="Revoke").click()
    expect(page.locator("#keys tr", has_text="billing").locator(".revoked")).not_to_have_text("")
    refused = httpx.get(
        f"{world.base}/api.ashx/v1/calls",
        headers={"Authorization": f"Bearer {minted}"},
        timeout=HTTP_TIMEOUT,
    )
    assert refused.status_code == 401

    # Transcripts: search, then a turn full of markup shown as text, never run.
    page.goto(f"{world.base}/admin/transcripts")
    page.fill('#search [name="q"]', "script")
    page.select_option('#search [name="source"]', "outbound-ai")
    page.fill('#search [name="since"]', "2026-01-01T00:00:00Z")
    page.click("#search button")
    expect(page.locator("#transcripts tbody tr")).to_have_count(1)
    page.click("text=oac-hostile00001")
    expect(page.locator("ol.turns")).to_contain_text(HOSTILE)
    assert page.evaluate("window.pwned") is None
    assert page.locator("ol.turns script, ol.turns img").count() == 0

    # A share link, shown once, opens in a browser without any cookie; revoked, it is gone.
    page.fill('#new-share [name="ttlHours"]', "0")
    page.click("#new-share button")
    url = page.locator("[data-secret]").inner_text()
    assert url.startswith(f"{world.base}/share/")
    expect(page.locator("#shares tbody tr").first).to_contain_text("never")
    stranger = browser.new_context()
    public = stranger.new_page()
    public.goto(url)
    expect(public.locator("body")).to_contain_text(HOSTILE)
    assert public.evaluate("window.pwned") is None
    assert stranger.cookies() == []
    page.goto(f"{world.base}/admin/transcripts/oac-hostile00001")
    assert url not in page.content()
    expect(page.locator("#shares tbody tr")).to_have_count(1)
    expect(page.locator("#shares .views")).to_have_text("1")
    page.locator("#shares button", has_text="Revoke").click()
    expect(page.locator("#shares")).to_contain_text("No share links.")
    assert public.goto(url).status == 404
    stranger.close()

    # Signing out ends the console session.
    page.click("text=Sign out")
    page.goto(f"{world.base}/admin/calls")
    page.wait_for_selector('input[name="password"]', timeout=TIMEOUT)

    assert not errors, errors
    outside = {u for u in requested if not u.startswith(world.base) and not u.startswith("data:")}
    assert not outside, outside
    context.close()


def test_numbers_routing_whitelist_users_and_settings(world: World, browser: Any) -> None:
    from playwright.sync_api import expect

    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    watch_console(page, errors)
    sign_in(page, world.base)
    page.wait_for_url(f"{world.base}/admin/calls", timeout=TIMEOUT)

    # Numbers: the AI key and prompt go in, and never come back out.
    page.goto(f"{world.base}/admin/numbers")
    form = page.locator("#new-number")
    fill(
        form,
        {
            "number": "+4930555012", "name": "Front desk", "voice": "Kore", "language": "de-DE",
            "apiKey": "sk-number-secret", "systemPrompt": "Greet callers in German.",
        },
    )  # fmt: skip
    form.locator("button").click()
    expect(page.locator(".notice")).to_have_text("Created.")
    edit = page.locator("#edit-number")
    expect(edit.locator('[name="apiKey"]')).to_have_value("")
    expect(edit.locator('[name="systemPrompt"]')).to_have_value("")
    edit.locator('[name="name"]').fill("Reception")
    edit.locator('[name="maxDurationSec"]').fill("900")
    edit.locator("button").click()
    expect(page.locator(".notice")).to_have_text("Saved.")
    page.goto(f"{world.base}/admin/numbers")
    row = page.locator("#numbers tr", has_text="+4930555012")
    expect(row).to_contain_text("Reception")
    expect(row).to_contain_text("900 s")
    assert "sk-number-secret" not in page.content()
    assert "Greet callers" not in page.content()

    # Routing: add rows, reorder, edit, dry-run, delete.
    page.goto(f"{world.base}/admin/routing")
    for did, user in (("+4930555*", "reception"), ("+4930555012", "desk")):
        submit(page, "#new-inbound", {"did": did, "user": user})
    inbound = page.locator("#inbound tbody tr")
    expect(inbound).to_have_count(3)
    expect(inbound.nth(0)).to_contain_text("+4930555*")
    page.fill('#dry-inbound [name="did"]', "+4930555012")
    page.click("#dry-inbound button")
    expect(page.locator("#inbound-result")).to_contain_text("Row 0 rings reception")
    inbound.nth(1).locator('button[title="Move up"]').click()
    expect(page.locator("#inbound tbody tr").nth(0)).to_contain_text("+4930555012")
    page.fill('#dry-inbound [name="did"]', "+4930555012")
    page.click("#dry-inbound button")
    expect(page.locator("#inbound-result")).to_contain_text("Row 0 rings desk")
    expect(page.locator("#inbound-result")).to_contain_text("no row above it matches")
    catchall = page.locator("#inbound tbody tr").nth(2)
    catchall.locator('[name="user"]').fill("operator")
    catchall.locator("button", has_text="Save").click()
    expect(page.locator("#inbound tbody tr").nth(2).locator('[name="user"]')).to_have_value(
        "operator"
    )
    assert page.locator("#inbound tbody tr").nth(2).locator("button.danger").count() == 0
    page.locator("#inbound tbody tr").nth(0).locator("button", has_text="Delete").click()
    expect(page.locator("#inbound tbody tr")).to_have_count(2)
    submit(page, "#new-outbound", {"match": "+49*", "trunkIds": "berlin-1, berlin-2"})
    submit(page, "#new-outbound", {"match": "+4930*", "trunkIds": "berlin-local"})
    page.locator("#outbound tbody tr").nth(1).locator('button[title="Move up"]').click()
    expect(page.locator("#outbound tbody tr").nth(0)).to_contain_text("+4930*")
    page.fill('#dry-outbound [name="number"]', "+4930123456")
    page.click("#dry-outbound button")
    expect(page.locator("#outbound-result")).to_contain_text("Row 0: trunks berlin-local")
    page.fill('#dry-outbound [name="number"]', "+14155550100")
    page.click("#dry-outbound button")
    expect(page.locator("#outbound-result")).to_contain_text("Default: trunks default")

    # Whitelist: add, comment, remove, and replace-all only once confirmed.
    page.goto(f"{world.base}/admin/whitelist")
    for number, comment in (("+4930123456", "Dana"), ("+14155550100", "")):
        submit(page, "#add-number", {"number": number, "comment": comment})
    rows = page.locator("#whitelist tbody tr")
    expect(rows).to_have_count(2)
    rows.nth(1).locator('[name="comment"]').fill("Lee <b>bold</b>")
    rows.nth(1).locator("button", has_text="Save").click()
    expect(page.locator("#whitelist tbody tr").nth(1).locator('[name="comment"]')).to_have_value(
        "Lee <b>bold</b>"
    )
    page.locator("#whitelist tbody tr").nth(0).locator("button", has_text="Remove").click()
    expect(page.locator("#whitelist tbody tr")).to_have_count(1)
    page.fill('#replace [name="lines"]', "+4940111\tHamburg\n+4989222, Munich\n")
    page.click("#replace button")
    expect(page.locator("#summary")).to_contain_text("2 number(s); 1 listed now will be removed")
    expect(page.locator("#removed")).to_contain_text("+14155550100")
    page.goto(f"{world.base}/admin/whitelist")  # walking away changes nothing
    expect(page.locator("#whitelist tbody tr")).to_have_count(1)
    page.fill('#replace [name="lines"]', "+4940111\tHamburg\n+4989222, Munich\n")
    page.click("#replace button")
    page.click("#confirm-replace button")
    expect(page.locator(".notice")).to_have_text("The whole list was replaced.")
    expect(page.locator("#whitelist tbody tr")).to_have_count(2)
    expect(page.locator("#whitelist")).to_contain_text("+4989222")

    # Users: create, change a role, reset a password (shown once), unlock, sign out everywhere.
    page.goto(f"{world.base}/admin/users")
    page.fill('#new-user [name="username"]', "sam")
    page.fill('#new-user [name="password"]', "a long password")
    page.select_option('#new-user [name="role"]', "user")
    page.click("#new-user button")
    sam = page.locator('tr[data-user="sam"]')
    expect(sam).to_be_visible()
    sam.locator('[name="role"]').select_option("power-user")
    sam.locator("button", has_text="Set role").click()
    expect(page.locator('tr[data-user="sam"] [name="role"]')).to_have_value("power-user")
    page.locator('tr[data-user="sam"]').locator("button", has_text="Reset password").click()
    new_password = page.locator("[data-secret]").inner_text()
    token = httpx.post(
        f"{world.base}/oidc.ashx/token",
        data={"grant_type": "password", "client_id": "cli", "username": "sam",
              "password": new_password},
        timeout=HTTP_TIMEOUT,
    )  # fmt: skip
    assert token.status_code == 200, token.text
    for _ in range(6):  # lock sam out with wrong passwords
        httpx.post(
            f"{world.base}/oidc.ashx/token",
            data={"grant_type": "password", "client_id": "cli", "username": "sam",
                  "password": "wrong"},
            timeout=HTTP_TIMEOUT,
        )  # fmt: skip
    page.goto(f"{world.base}/admin/users")
    expect(page.locator('tr[data-user="sam"] .lock')).to_contain_text("locked until")
    page.locator('tr[data-user="sam"]').locator("button", has_text="Unlock").click()
    expect(page.locator('tr[data-user="sam"] .lock')).to_have_text("ok")
    assert page.locator('tr[data-user="admin"]').locator("button", has_text="Reset").count() == 0
    page.locator('tr[data-user="sam"]').locator("button", has_text="Sign out everywhere").click()
    expect(page.locator(".notice")).to_contain_text("sam is signed out everywhere")

    # Settings: defaults and the SFU tunables, snapped to their bounds.
    page.goto(f"{world.base}/admin/settings")
    expect(page.locator("#tunables")).to_contain_text("5 to 600 (whole)")
    page.fill('#settings [name="DefaultVoice"]', "Kore")
    page.fill('#settings [name="Phone:Sfu:StressWindowSec"]', "9999")
    page.click("#settings button")
    expect(page.locator(".notice")).to_have_text("Saved.")
    expect(page.locator('#settings [name="Phone:Sfu:StressWindowSec"]')).to_have_value("600")
    expect(page.locator('#settings [name="DefaultVoice"]')).to_have_value("Kore")

    # Signing oneself out everywhere loads the sign-in as a whole page: the provider's own.
    page.goto(f"{world.base}/admin/users")
    page.locator('tr[data-user="admin"]').locator("button", has_text="Sign out everywhere").click()
    page.wait_for_url(re.compile(r"/oidc\.ashx/authorize\?"), timeout=TIMEOUT)
    expect(page.locator('[name="password"]')).to_be_visible()

    assert not errors, errors
    context.close()


def test_every_page_fits_a_phone(world: World, browser: Any) -> None:
    """At 390 px the header wraps and a wide table scrolls inside itself: the page never
    scrolls sideways, and Sign out stays on the screen."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    sign_in(page, world.base)
    page.wait_for_url(f"{world.base}/admin/calls", timeout=TIMEOUT)
    page.goto(f"{world.base}/admin/webhooks")  # a row with a long URL, wider than the phone
    page.check('#new-webhook [value="*"]')
    submit(page, "#new-webhook", {"url": "http://127.0.0.1:9/" + "a-long-path/" * 12})
    page.wait_for_selector("[data-subscription]", timeout=TIMEOUT)
    wide = []
    for path in ("calls", "webhooks", "api-keys", "transcripts", "numbers", "routing",
                 "whitelist", "users", "sign-in", "settings", "relay"):  # fmt: skip
        page.goto(f"{world.base}/admin/{path}")
        scroll, client = page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        if scroll > client:
            wide.append(f"{path}: {scroll} > {client}")
        sign_out = page.locator("header.top .who button").last.bounding_box()
        assert sign_out is not None
        assert sign_out["x"] + sign_out["width"] <= 390, path
    assert wide == []
    context.close()
