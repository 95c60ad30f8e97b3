"""Screenshots of every console page for docs/console.md.

Run `.venv/bin/python scripts/console_screenshots.py`.

Serves the application on a free port with a scratch SQLite database and some demo data, signs
in through the identity provider's login page in Debian's chromium (headless) and saves one PNG
per page under docs/console/.
"""

from __future__ import annotations

import datetime as dt
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from _screenshots import PASSWORD, chromium, served, sign_in

from switchboard.identity import clients
from switchboard.identity import service as identity
from switchboard.platform.numbers import service as numbers
from switchboard.platform.routing import service as routing
from switchboard.platform.transcripts.service import TranscriptInput, Turn, save_transcript
from switchboard.platform.whitelist import service as whitelist
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

OUT = Path(__file__).resolve().parent.parent / "docs" / "console"
PAGES = [
    ("calls", "/admin/calls"),
    ("transcripts", "/admin/transcripts"),
    ("transcript", "/admin/transcripts/oac-5d2e8a41c0b7"),
    ("numbers", "/admin/numbers"),
    ("routing", "/admin/routing?did=%2B4930555012&number=%2B4930123456"),
    ("whitelist", "/admin/whitelist"),
    ("webhooks", "/admin/webhooks"),
    ("api-keys", "/admin/api-keys"),
    ("users", "/admin/users"),
    ("sessions", "/admin/users/admin/sessions"),
    ("sign-in-settings", "/admin/sign-in"),
    ("settings", "/admin/settings"),
]


async def seed(settings: Settings, host: str) -> str:
    """The demo tenant with an admin, numbers, routes, a whitelist and a transcript; returns
    an API key for placing calls over REST."""
    runtime = Runtime(settings)
    async with runtime.db.transaction() as session:
        tenant = await tenants.create_tenant(
            session, name="demo", domains=[host], clock=runtime.clock, box=runtime.box
        )
        admin = await identity.create_user(
            session, tenant=tenant, username="admin", password=PASSWORD, role="admin",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        for username, role in (("dana", "power-user"), ("lee", "user")):
            await identity.create_user(
                session, tenant=tenant, username=username, password=PASSWORD, role=role,
                clock=runtime.clock, passwords=runtime.passwords,
            )  # fmt: skip
        await clients.ensure_console_client(
            session, tenant=tenant, base_url=f"http://{host}", clock=runtime.clock
        )
        _, key = await identity.create_api_key(
            session, tenant_id=tenant.id, user=admin, name="reporting", clock=runtime.clock
        )
        await numbers.create_number(
            session, tenant_id=tenant.id, name="Front desk", number="+4930555012", voice="Kore",
            language="de-DE", api_key="sk-demo", system_prompt="Greet callers.",
            box=runtime.box, clock=runtime.clock,
        )  # fmt: skip
        await routing.create_inbound(
            session, tenant_id=tenant.id, did="+4930555*", from_number="", user="reception"
        )
        await routing.create_outbound(
            session, tenant_id=tenant.id, match="+49*", trunk_ids=["berlin-1", "berlin-2"]
        )
        for number, comment in (("+4930123456", "Dana, renewals"), ("+14155550100", "")):
            await whitelist.add_number(session, tenant_id=tenant.id, number=number, comment=comment)
        started = runtime.clock.now() - dt.timedelta(hours=2)
        await save_transcript(
            session,
            tenant_id=tenant.id,
            tenant_name="demo",
            data=TranscriptInput(
                call_id="oac-5d2e8a41c0b7",
                caller_source="outbound-ai",
                requested_by="admin",
                phone="+4930123456",
                display_name="Dana Example",
                email="ops@example.com",
                number="",
                rule="",
                voice="Aoede",
                language="en-US",
                model="gemini-live-2.5-flash",
                trunk_id="berlin-1",
                started=started,
                answered=started + dt.timedelta(seconds=4),
                ended=started + dt.timedelta(seconds=48),
                outcome="finished",
                error_detail="",
                tokens_prompt=120,
                tokens_total=840,
                input_turns=2,
                output_turns=2,
                turns=[
                    Turn("AI", "Hello Dana, this is Acme about your renewal.", started),
                    Turn("Caller", "Yes, go ahead.", started + dt.timedelta(seconds=9)),
                    Turn(
                        "AI",
                        "Your plan renews next week at the same price.",
                        started + dt.timedelta(seconds=15),
                    ),
                    Turn("Caller", "Great, thanks.", started + dt.timedelta(seconds=30)),
                ],
            ),
            data_dir=settings.data_dir,
            clock=runtime.clock,
        )
    await runtime.db.dispose()
    return key


def place_calls(base: str, key: str) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for phone, extra in (
        ("+4930123400", {}),
        ("+4930123401", {}),
        ("+14155550100", {"scheduleAtUtc": later, "displayName": "Lee Example"}),
    ):
        body = {"phone": phone, "email": "ops@example.com", "systemPrompt": "Confirm the "
                "appointment.", "apiKey": "sk-demo", **extra}  # fmt: skip
        httpx.post(f"{base}/api.ashx/v1/calls", json=body, headers=headers).raise_for_status()


class Receiver(BaseHTTPRequestHandler):
    """A webhook receiver that answers 200, for a delivery log with something in it."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        body = b'{"received": true}'
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


def main() -> None:
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        with served(seed, sim_speed=20, webhook_allow_private=("127.0.0.0/8",)) as (base, key):
            place_calls(base, key)
            shoot(base, f"http://127.0.0.1:{receiver.server_address[1]}/hooks")
    finally:
        receiver.shutdown()


def shoot(base: str, hook_url: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.goto(f"{base}/admin/")
        page.wait_for_selector('input[name="password"]')
        page.screenshot(path=str(OUT / "sign-in.png"))
        sign_in(page, base, "/admin", "/admin/calls")
        page.wait_for_timeout(1500)  # let the simulated calls move on
        page.goto(f"{base}/admin/webhooks")
        page.fill('#new-webhook [name="url"]', hook_url)
        for event in ("call.ended", "transcript.saved", "share.viewed"):
            page.check(f'#new-webhook input[value="{event}"]')
        page.click("#new-webhook button")
        page.screenshot(path=str(OUT / "webhook-created.png"), full_page=True)
        page.locator("#subscriptions a").first.click()
        page.click("text=Send webhook.test")
        page.wait_for_timeout(1500)
        page.reload()
        page.screenshot(path=str(OUT / "webhook-log.png"), full_page=True)
        for name, path in PAGES:
            page.goto(base + path)
            page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
            print(OUT / f"{name}.png")
        page.goto(f"{base}/admin/api-keys")
        page.fill('#mint-key [name="name"]', "billing")
        page.click("#mint-key button")
        page.screenshot(path=str(OUT / "api-key-minted.png"), full_page=True)
        page.goto(f"{base}/admin/transcripts/oac-5d2e8a41c0b7")
        page.click("#new-share button")
        page.screenshot(path=str(OUT / "share-created.png"), full_page=True)


if __name__ == "__main__":
    main()
