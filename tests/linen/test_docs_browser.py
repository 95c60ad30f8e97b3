"""The /api/docs reference renders in a real browser from a real server, fully offline."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from switchboard.app import create_app
from switchboard.settings import Settings
from tests import ports
from tests.asgiserve import serving_in_thread
from tests.browser import ARGS, CHROMIUM, needs_chromium


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    port = ports.free_port()
    settings = Settings(
        data_dir=tmp_path,
        public_base_url=f"http://127.0.0.1:{port}",
        secret_key="test-secret-key-with-at-least-32-characters",
        run_workers=False,
    )
    with serving_in_thread(create_app(settings), port):
        yield f"http://127.0.0.1:{port}"


@needs_chromium
def test_reference_renders_offline(server: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    requested: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        page.on("request", lambda request: requested.append(request.url))
        page.goto(f"{server}/api/docs")
        page.wait_for_selector(".opblock-summary-path", timeout=20_000)
        paths = page.locator(".opblock-summary-path").all_inner_texts()
        title = page.locator(".info .title").inner_text()
        page.screenshot(path=str(tmp_path / "docs.png"), full_page=False)
        browser.close()
    assert "linen portal API" in title
    assert "/v1/properties" in paths
    assert "/v1/sheets/{sheet_id}/confirm" in paths
    assert "/laundry/invoices" in paths
    hosts = {urlsplit(url).hostname for url in requested if not url.startswith("data:")}
    assert hosts == {"127.0.0.1"}, requested
    assert any(url.endswith("/api/openapi.json") for url in requested)
    print(f"screenshot: {tmp_path / 'docs.png'}")
