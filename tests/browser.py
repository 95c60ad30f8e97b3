"""The Debian chromium the browser tests drive: where it is, its flags, and the skip where a
developer's machine lacks it (CI must have it: `make install` installs it); the timeout of the
HTTP requests these tests send beside the browser."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# The server a browser test drives runs in a thread of the test's process, beside the browser:
# on a loaded run of the suite an answer has taken longer than httpx's default 5 s.
HTTP_TIMEOUT = 30.0
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"), reason="Debian chromium is not installed"
)
