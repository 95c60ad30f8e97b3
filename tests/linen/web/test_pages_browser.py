"""The linen web app in Debian's chromium against a real server: a turnover day as the operations
team runs it, the read-only view of a user, and the pages on a phone-sized screen.

The seed is the demo data (`switchboard demo`); the laundry talks to the Laundry API over HTTP.
One browser for the whole flow keeps the suite quick; the rules are tested over HTTP in
test_pages_http.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from switchboard.linen.demo import create_demo_linen
from switchboard.linen.laundries import service as laundries
from switchboard.linen.laundries.models import Laundry
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.browser import ARGS, CHROMIUM, HTTP_TIMEOUT, needs_chromium
from tests.console.conftest import run, serve
from tests.console.signin import console_clients
from tests.linen.helpers import make_pdf
from tests.linen.web.test_pages_http import pdf_text
from tests.ports import free_port

pytestmark = [pytest.mark.slow, needs_chromium]
TIMEOUT = 15_000


@dataclasses.dataclass
class Seeded:
    base: str
    key: str


async def _seed(settings: Settings, port: int) -> Seeded:
    runtime = Runtime(settings)
    try:
        acme = await factories.tenant(runtime, "acme", [f"127.0.0.1:{port}"])
        await console_clients(runtime, acme)
        async with runtime.db.transaction() as session:
            await create_demo_linen(
                session, tenant_id=acme.id, clock=runtime.clock, box=runtime.box
            )
            laundry = (await laundries.many(session, tenant_id=acme.id, ids=[1])).get(1)
            assert isinstance(laundry, Laundry)
            _, key = await laundries.issue_key(
                session, tenant_id=acme.id, laundry_id=laundry.id, name="test",
                created_by="test", clock=runtime.clock,
            )  # fmt: skip
    finally:
        await runtime.db.dispose()
    return Seeded(base=settings.public_base_url, key=key)


@pytest.fixture
def db_url(sqlite_template: Path, tmp_path: Path) -> str:
    target = tmp_path / "switchboard.db"
    shutil.copyfile(sqlite_template, target)
    return f"sqlite+aiosqlite:///{target}"


@pytest.fixture
def seeded(settings: Settings) -> Iterator[Seeded]:
    port = free_port()
    settings = settings.model_copy(update={"public_base_url": f"http://127.0.0.1:{port}"})
    result = run(_seed(settings, port))
    assert isinstance(result, Seeded)
    for _served in serve(settings):
        yield result


@pytest.fixture
def browser(seeded: Seeded) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


def sign_in(page: Any, base: str, username: str, *, switch: bool = False) -> None:
    page.goto(f"{base}/app/login?switch=1" if switch else f"{base}/app/")
    page.wait_for_selector('input[name="password"]', timeout=TIMEOUT)
    page.fill('input[name="username"]', username)
    page.fill('input[name="password"]', factories.PASSWORD)
    page.press('input[name="password"]', "Enter")
    page.wait_for_url(f"{base}/app/today", timeout=TIMEOUT)


def test_a_turnover_day_in_the_browser(seeded: Seeded, browser: Any) -> None:
    base = seeded.base
    errors: list[str] = []
    page = browser.new_page()
    # Script errors and CSP violations; failed loads are seen by status below (the provider's
    # login page has no favicon, a probe of the browser's own).
    page.on(
        "console",
        lambda m: (
            errors.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource")
            else None
        ),
    )
    page.on(
        "response",
        lambda r: (
            errors.append(f"{r.status} {r.url}") if r.status >= 400 and "/app/" in r.url else None
        ),
    )
    page.set_default_timeout(TIMEOUT)
    sign_in(page, base, "admin")
    assert page.locator("#packing article").count() == 2  # the demo's two confirmed sheets today
    middles = [_middle(page, f".pager {part}") for part in (".previous", "form", ".next")]
    assert max(middles) - min(middles) < 4, middles  # the day pager is one line

    # A sheet from the par levels, for the day after tomorrow; confirmed.
    day = (dt.datetime.now(dt.UTC).date() + dt.timedelta(days=3)).isoformat()
    page.click("text=Properties")
    page.fill('input[name="q"]', "hill")
    page.click("form.filters button")
    page.click("text=HILL-03")
    page.fill('#new-sheet input[name="service_date"]', day)
    page.click("#new-sheet button")
    page.wait_for_selector("#edit-lines")
    assert page.locator('[data-item="SET_DOUBLE"] input').input_value() == "2"
    page.fill('[data-item="TOWEL_BATH"] input', "7")
    page.click("#edit-lines button")
    page.click("#actions >> text=Confirm")
    page.wait_for_selector("[data-status]:has-text('confirmed')")
    sheet_id = page.url.rsplit("/", 1)[1]

    # The laundry reports its counts and uploads its invoice through the Laundry API.
    headers = {"Authorization": f"Bearer {seeded.key}"}
    listed = httpx.get(f"{base}/api/laundry/jobs", headers=headers, timeout=HTTP_TIMEOUT)
    jobs = listed.json()["data"]
    job = next(j for j in jobs if str(j["id"]) == sheet_id)
    counts = [{"itemTypeId": x["itemTypeId"], "qtyDelivered": x["qtyOrdered"],
               "qtyCollected": x["qtyOrdered"], "qtyRejected": 1 if i == 0 else 0}
              for i, x in enumerate(job["lines"])]  # fmt: skip
    reported = httpx.post(
        f"{base}/api/laundry/jobs/{sheet_id}/delivery",
        json={"lines": counts},
        headers=headers,
        timeout=HTTP_TIMEOUT,
    )
    assert reported.status_code == 200, reported.text
    page.reload()
    assert page.locator('[data-item="TOWEL_BATH"] .delivered').inner_text() == "7"
    assert page.locator('[data-item="SET_DOUBLE"] .rejected').inner_text() == "1"
    assert page.locator('[data-item="SET_DOUBLE"] .balance').inner_text() == "1"

    page.click("text=Invoices")
    assert job["number"] in page.locator("#not-invoiced").inner_text()
    meta = {"invoiceNumber": "AT-TEST-9", "invoiceDate": day, "currency": "EUR", "net": 5000,
            "tax": 1150, "gross": 6150,
            "lines": [{"linenSheetId": int(sheet_id), "description": "turnover", "qty": 1,
                       "unitPrice": 5000, "net": 5000}]}  # fmt: skip
    uploaded = httpx.post(
        f"{base}/api/laundry/invoices", headers=headers,
        files={"file": ("inv.pdf", make_pdf(), "application/pdf"),
               "metadata": (None, json.dumps(meta), "application/json")},
        timeout=HTTP_TIMEOUT,
    )  # fmt: skip
    assert uploaded.status_code == 201, uploaded.text
    page.reload()
    assert job["number"] not in page.locator("#not-invoiced").inner_text()
    page.click("text=AT-TEST-9")
    page.click("#actions >> text=Approve")
    page.wait_for_selector("[data-status]:has-text('approved')")

    # A user reads the same sheet without a single write control.
    page.click("text=Sign out")
    sign_in(page, base, "user", switch=True)
    page.goto(f"{base}/app/sheets/{sheet_id}")
    assert page.locator("#actions").count() == 0
    assert page.locator("form[action$='/lines']").count() == 0
    assert errors == []

    # On a phone the pages fit the screen: tables scroll inside themselves.
    phone = browser.new_page(viewport={"width": 390, "height": 844})
    sign_in(phone, base, "admin", switch=True)
    for path in ("/app/today", f"/app/sheets/{sheet_id}", "/app/statistics"):
        phone.goto(f"{base}{path}")
        width = phone.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, (path, width)
    # The pager's links share a line; the day picker takes the next one.
    phone.goto(f"{base}/app/today")
    previous, picker = _middle(phone, ".pager .previous"), _middle(phone, ".pager form")
    assert abs(previous - _middle(phone, ".pager .next")) < 4
    assert picker > previous + 10


def _middle(page: Any, selector: str) -> float:
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    return float(box["y"] + box["height"] / 2)


def _chart(page: Any, title: str) -> dict[str, str]:
    bars = page.locator(f'svg[data-chart="{title}"] g')
    return {
        bars.nth(i).get_attribute("data-label"): bars.nth(i).get_attribute("data-value")
        for i in range(bars.count())
    }


def test_the_back_office_in_the_browser(seeded: Seeded, browser: Any, tmp_path: Path) -> None:
    """An admin edits the catalogue, prices, the vault and records a paper invoice; statistics
    narrow to one property; a power user sees none of the forms and is refused if posting."""
    base = seeded.base
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT)
    sign_in(page, base, "admin")

    page.click("header >> text=Catalogue")
    page.click('[data-code="TEA_TOWEL"] >> text=Edit')
    page.fill('input[name="name"]', "Kitchen towel")
    page.click("#item-type-form button")
    page.wait_for_url(f"{base}/app/catalogue")
    assert "Kitchen towel" in page.locator('[data-code="TEA_TOWEL"]').inner_text()

    page.click("header >> text=Laundries")
    page.click("text=Lavandaria Atlântico")
    page.click("text=New price list")
    page.fill('input[name="name"]', "Sterling")
    page.fill('input[name="currency"]', "GBP")
    page.fill('input[name="validFrom"]', "2027-01-01")
    page.fill('[data-code="TOWEL_BATH"] input[name^="price_"]', "1.20")
    page.click("#price-list-form button")
    assert "1.20 GBP" in page.locator("#price-lists").inner_text()

    page.goto(f"{base}/app/properties?q=SEA")
    page.click("text=SEA-01")
    page.click("text=Add vault entry")
    page.select_option('select[name="kind"]', "alarm")
    page.fill('input[name="label"]', "Alarm panel")
    page.fill('input[name="secret"]', "8642")
    page.click("#vault-form button")
    assert "Alarm panel" in page.locator("h1").inner_text()
    assert "8642" not in page.content()

    pdf = tmp_path / "paper-invoice.pdf"
    pdf.write_bytes(make_pdf("PAPER-1"))
    page.click("header >> text=Invoices")
    page.click("text=Record an invoice")
    page.select_option('select[name="laundryId"]', label="Lavandaria Atlântico")
    page.fill('input[name="invoiceNumber"]', "PAPER-1")
    page.fill('input[name="invoiceDate"]', "2027-01-31")
    page.fill('input[name="net"]', "12.00")
    page.fill('input[name="tax"]', "2.76")
    page.fill('input[name="otherDescription"]', "Lost towels")
    page.fill('input[name="otherNet"]', "12.00")
    page.set_input_files('input[name="file"]', str(pdf))
    page.click("#invoice-form button")
    page.wait_for_selector("[data-status]:has-text('received')")
    facts = page.locator("dl.facts").inner_text()
    assert "admin" in facts
    assert "14.76 EUR" in facts
    pdf_link = page.locator("a[href$='/pdf?download=1']").get_attribute("href")
    assert (
        httpx.get(f"{base}{pdf_link}", cookies=_cookies(page), timeout=HTTP_TIMEOUT).content
        == pdf.read_bytes()
    )

    page.click("header >> text=Statistics")
    page.select_option('select[name="groupBy"]', "property")
    page.click("form.filters button")
    page.wait_for_url("**groupBy=property**")
    per_property = _chart(page, "Items")
    page.select_option('select[name="groupBy"]', "month")
    page.select_option('select[name="propertyId"]', label="HILL-03")
    page.click("form.filters button")
    page.wait_for_url("**propertyId=**")
    per_month = _chart(page, "Items")
    assert per_month
    assert sum(int(v) for v in per_month.values()) == int(per_property["HILL-03 Hillside Villa"])

    page.click("text=Sign out")
    sign_in(page, base, "power", switch=True)
    page.goto(f"{base}/app/laundries/1")
    assert page.locator("text=New price list").count() == 0
    assert page.locator("#price-lists form").count() == 0
    csrf = page.locator('header input[name="csrf"]').input_value()
    refused = page.request.post(
        f"{base}/app/laundries/1/prices",
        form={"csrf": csrf, "currency": "USD", "validFrom": "2027-01-01"},
    )
    assert refused.status == 403
    page.goto(f"{base}/app/laundries/1")
    assert "USD" not in page.locator("#price-lists").inner_text()

    # The power user reveals the new alarm code after confirming; the admin sees the reveal.
    page.goto(f"{base}/app/properties?q=SEA")
    page.click("text=SEA-01")
    page.click("text=Alarm panel")
    assert page.locator("[data-secret]").count() == 0
    page.check('#reveal input[name="confirm"]')
    page.click("#reveal button")
    assert page.locator("[data-secret]").inner_text() == "8642"
    entry_url = page.url
    page.reload()  # the entry's page again: masked, nothing revealed (nor logged) anew
    assert page.locator("[data-secret]").count() == 0
    # The control sheet opens as a PDF carrying the sheet's lines.
    page.goto(f"{base}/app/sheets/1")
    number = page.locator("h1").inner_text().split()[0]
    control = page.request.get(f"{base}/app/sheets/1/control.pdf")
    assert control.headers["content-type"] == "application/pdf"
    text = pdf_text(control.body())
    assert number in text
    assert "Double bed set" in text
    page.click("text=Sign out")
    sign_in(page, base, "admin", switch=True)
    page.goto(entry_url)
    assert "power-user" in page.locator("#audit").inner_text()
    assert page.locator("#audit tbody tr").count() == 1  # one reveal, one row


def _cookies(page: Any) -> dict[str, str]:
    return {c["name"]: c["value"] for c in page.context.cookies()}
