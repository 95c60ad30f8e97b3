"""What the screenshot scripts share: a scratch application served on a free port and a
headless Debian chromium signed in through the identity provider's login page."""

from __future__ import annotations

import asyncio
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
from playwright.sync_api import Browser, Page, sync_playwright

from switchboard.app import create_app
from switchboard.migrate import upgrade
from switchboard.settings import Settings

PASSWORD = "screenshots only"  # noqa: S105 (a scratch tenant that lives for one run)
CHROMIUM = "/usr/bin/chromium"
Seeded = TypeVar("Seeded")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@contextmanager
def served(
    seed: Callable[[Settings, str], Coroutine[Any, Any, Seeded]], **settings: Any
) -> Iterator[tuple[str, Seeded]]:
    """The application on a free port over a scratch SQLite database, seeded by
    ``seed(settings, host)``; yields the base URL and what the seed returned."""
    port = free_port()
    host = f"127.0.0.1:{port}"
    base = f"http://{host}"
    with tempfile.TemporaryDirectory() as scratch:
        scratch_settings = Settings(
            data_dir=Path(scratch), public_base_url=base,
            secret_key="screenshots-secret-key-with-32-characters",  # noqa: S106 (scratch)
            argon2_time_cost=1, argon2_memory_kib=64, argon2_parallelism=1, **settings,
        )  # fmt: skip
        upgrade(scratch_settings.resolved_database_url)
        seeded = asyncio.run(seed(scratch_settings, host))
        server = uvicorn.Server(
            uvicorn.Config(create_app(scratch_settings), host="127.0.0.1", port=port,
                           log_config=None, access_log=False, timeout_graceful_shutdown=2)
        )  # fmt: skip
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        try:
            yield base, seeded
        finally:
            server.should_exit = True
            thread.join(timeout=15)


@contextmanager
def chromium() -> Iterator[Browser]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def sign_in(page: Page, base: str, mount: str, landing: str, username: str = "admin") -> None:
    """Open the app at ``mount``, sign in on the provider's page and wait for ``landing``."""
    page.goto(f"{base}{mount}/")
    page.wait_for_selector('input[name="password"]')
    page.fill('input[name="username"]', username)
    page.fill('input[name="password"]', PASSWORD)
    page.press('input[name="password"]', "Enter")
    page.wait_for_url(f"{base}{landing}")
