"""The Debian chromium the browser tests drive: where it is, its flags, and the skip where a
developer's machine lacks it (CI must have it: `make install` installs it)."""

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
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"), reason="Debian chromium is not installed"
)
