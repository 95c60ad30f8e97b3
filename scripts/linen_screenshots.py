"""Screenshots of the linen web app's pages for docs/linen.md.

Run `.venv/bin/python scripts/linen_screenshots.py`.

Serves the application on a free port with a scratch SQLite database and the demo linen data
(`switchboard demo`'s), signs in through the identity provider's login page in Debian's chromium
(headless) and saves one PNG per page under docs/linen/: desktop width, and the day's page at
phone width.
"""

from __future__ import annotations

from pathlib import Path

from _screenshots import PASSWORD, chromium, served, sign_in

from switchboard.identity import clients
from switchboard.identity import service as identity
from switchboard.linen.demo import create_demo_linen
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

OUT = Path(__file__).resolve().parent.parent / "docs" / "linen"
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
    ("price-list-form", "/app/laundries/1/prices/1/edit"),
    ("invoice-form", "/app/invoices/new"),
    ("vault-form", "/app/vault/new?owner=property:1"),
    ("item-type-form", "/app/catalogue/item-types/1/edit"),
]


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
        await clients.ensure_web_clients(session, tenant=tenant, scheme="http", clock=runtime.clock)
        await create_demo_linen(session, tenant_id=tenant.id, clock=runtime.clock, box=runtime.box)
    await runtime.db.dispose()


def shoot(base: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with chromium() as browser:
        page = browser.new_context(viewport={"width": 1100, "height": 760}).new_page()
        sign_in(page, base, "/app", "/app/today")
        for name, path in PAGES:
            page.goto(f"{base}{path}")
            page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{base}/app/today")
        page.screenshot(path=str(OUT / "today-phone.png"), full_page=True)


def main() -> None:
    with served(seed) as (base, _):
        shoot(base)


if __name__ == "__main__":
    main()
