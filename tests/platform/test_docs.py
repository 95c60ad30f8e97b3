"""``/docs``: the platform API's interactive reference, served offline and linked from the
catalogue."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from httpx import AsyncClient

from tests.browser import ARGS, CHROMIUM
from tests.linen.test_docs_browser import server  # noqa: F401 (a fixture)


async def test_the_catalogue_links_the_reference(app_client: AsyncClient) -> None:
    catalogue = (await app_client.get("/api.ashx/v1")).json()
    assert catalogue["docs"] == "/docs"
    assert catalogue["openapi"] == "/openapi.json"
    page = await app_client.get(catalogue["docs"])
    assert page.status_code == 200
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    assert "/docs/assets/swagger-ui-bundle.js" in page.text
    init = await app_client.get("/docs/init.js")
    assert '"/openapi.json"' in init.text
    asset = await app_client.get("/docs/assets/swagger-ui.css")
    assert asset.status_code == 200
    assert asset.headers["cache-control"] == "no-store"


@pytest.mark.slow
@pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"), reason="Debian chromium is not installed"
)
def test_reference_renders_offline(server: str, tmp_path: Path) -> None:  # noqa: F811
    from playwright.sync_api import sync_playwright

    requested: list[str] = []
    said: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        page.on("request", lambda request: requested.append(request.url))
        page.on("console", lambda message: said.append(message.text))
        page.goto(f"{server}/docs")
        page.wait_for_selector(".opblock-summary-path", timeout=20_000)
        paths = page.locator(".opblock-summary-path").all_inner_texts()
        title = page.locator(".info .title").inner_text()
        browser.close()
    assert "switchboard platform API" in title
    assert not [text for text in said if "Content Security Policy" in text], said
    assert "/api.ashx/v1/calls" in paths
    assert "/oidc.ashx/token" in paths
    hosts = {urlsplit(url).hostname for url in requested if not url.startswith("data:")}
    assert hosts == {"127.0.0.1"}, requested
