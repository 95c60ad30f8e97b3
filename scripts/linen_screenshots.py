"""Screenshots of the linen web app's pages for docs/linen.md.

Run `.venv/bin/python scripts/linen_screenshots.py`.

Serves the application on a free port with a scratch SQLite database and the demo linen data
(`switchboard demo`'s), signs in through the identity provider's login page in Debian's chromium
(headless) and saves one PNG per page under docs/linen/: desktop width, and the day's page at
phone width.
"""

from __future__ import annotations

import asyncio
import socket
import tempfile
import threading
import time
from pathlib import Path

import uvicorn
from playwright.sync_api import sync_playwright

from switchboard.app import create_app
from switchboard.identity import clients
from switchboard.identity import service as identity
from switchboard.linen.demo import create_demo_linen
from switchboard.migrate import upgrade
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

OUT = Path(__file__).resolve().parent.parent / "docs" / "linen"
PASSWORD = "screenshots only"  # noqa: S105 (a scratch tenant that lives for one run)
CHROMIUM = "/usr/bin/chromium"
PAGES = [
    ("today", "/app/today"),
    ("properties", "/app/properties"),
    ("property", "/app/properties/1"),
    ("sheet", "/app/sheets/1"),
    ("vault", "/app/vault/1"),
    ("invoices", "/app/invoices"),
    ("invoice", "/app/invoices/1"),
    ("laundry", "/app/laundries/1"),
    ("statistics", "/app/statistics?groupBy=property"),
    ("catalogue", "/app/catalogue"),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def seed(settings: Settings, host: str) -> None:
    runtime = Runtime(settings)
    async with runtime.db.transaction() as session:
        tenant = await tenants.create_tenant(
            session, name="demo", domains=[host], clock=runtime.clock, box=runtime.box
        )
        await identity.create_user(
            session, tenant=tenant, username="admin", password=PASSWORD, role="admin",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        await clients.ensure_linen_client(
            session, tenant=tenant, base_url=f"http://{host}", clock=runtime.clock
        )
        await create_demo_linen(session, tenant_id=tenant.id, clock=runtime.clock, box=runtime.box)
    await runtime.db.dispose()


def shoot(base: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1100, "height": 760})
        page = context.new_page()
        page.goto(f"{base}/app/")
        page.fill('input[name="username"]', "admin")
        page.fill('input[name="password"]', PASSWORD)
        page.press('input[name="password"]', "Enter")
        page.wait_for_url(f"{base}/app/today")
        for name, path in PAGES:
            page.goto(f"{base}{path}")
            page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{base}/app/today")
        page.screenshot(path=str(OUT / "today-phone.png"), full_page=True)
        browser.close()


def main() -> None:
    port = free_port()
    host = f"127.0.0.1:{port}"
    base = f"http://{host}"
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(
            data_dir=Path(scratch), public_base_url=base,
            secret_key="screenshots-secret-key-with-32-characters",  # noqa: S106 (scratch)
            argon2_time_cost=1, argon2_memory_kib=64, argon2_parallelism=1,
        )  # fmt: skip
        upgrade(settings.resolved_database_url)
        asyncio.run(seed(settings, host))
        server = uvicorn.Server(
            uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_config=None,
                           access_log=False, timeout_graceful_shutdown=2)
        )  # fmt: skip
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        try:
            shoot(base)
        finally:
            server.should_exit = True
            thread.join(timeout=15)


if __name__ == "__main__":
    main()
