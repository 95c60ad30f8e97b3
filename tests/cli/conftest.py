"""The operator CLI in-process (click's runner) against the test database."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from switchboard.cli import main
from tests.conftest import TEST_SECRET


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", db_url)
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_SECRET_KEY", TEST_SECRET)
    monkeypatch.setenv("SWITCHBOARD_PUBLIC_BASE_URL", "http://ops.test")
    monkeypatch.setenv("SWITCHBOARD_ARGON2_TIME_COST", "1")
    monkeypatch.setenv("SWITCHBOARD_ARGON2_MEMORY_KIB", "64")
    monkeypatch.setenv("SWITCHBOARD_ARGON2_PARALLELISM", "1")
    return CliRunner()


def ok(cli: CliRunner, *args: str, stdin: str | None = None) -> str:
    """Run a command that must succeed; its output."""
    result = cli.invoke(main, list(args), input=stdin)
    assert result.exit_code == 0, result.output
    return result.output
