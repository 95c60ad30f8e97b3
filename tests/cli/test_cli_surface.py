"""The CLI's own surface: --version, -h, --json on listing and show commands, a fast --help."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from switchboard import __version__
from switchboard.cli import main
from tests.conftest import TEST_SECRET

HEAVY = ("sqlalchemy", "fastapi", "starlette", "pydantic", "uvicorn", "httpx", "aiohttp")


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


def _ok(cli: CliRunner, *args: str, stdin: str | None = None) -> str:
    result = cli.invoke(main, list(args), input=stdin)
    assert result.exit_code == 0, result.output
    return result.output


def test_version_and_short_help() -> None:
    runner = CliRunner()
    assert (
        runner.invoke(main, ["--version"]).output.strip() == f"switchboard, version {__version__}"
    )
    top = runner.invoke(main, ["-h"])
    assert top.exit_code == 0
    for name in ("serve", "worker", "user", "webhook", "sim", "linen"):
        assert f"  {name} " in top.output
    nested = runner.invoke(main, ["user", "delete", "-h"])
    assert nested.exit_code == 0
    assert "--tenant" in nested.output


def test_help_loads_no_web_or_database_stack() -> None:
    """``--help`` imports click and the command table only: measured in a fresh interpreter."""
    probe = (
        "import sys\n"
        "from switchboard.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert out.strip().splitlines()[-1] == "[]"
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 0.5, f"--help took {cpu:.2f} s of CPU"


def test_listing_and_show_commands_take_json(cli: CliRunner) -> None:
    _ok(cli, "tenant", "create", "ops", "--domain", "ops.test")
    _ok(cli, "user", "create", "ana", "--tenant", "ops", "--role", "admin", "--password-stdin",
        stdin="correct horse battery\n")  # fmt: skip
    _ok(cli, "apikey", "create", "--tenant", "ops", "--user", "ana", "--name", "ci")
    _ok(cli, "keys", "rotate")

    tenants = [json.loads(line) for line in _ok(cli, "tenant", "list", "--json").splitlines()]
    assert tenants == [{"id": tenants[0]["id"], "name": "ops", "domains": ["ops.test"],
                        "primary": True}]  # fmt: skip
    shown = json.loads(_ok(cli, "tenant", "show", "ops", "--json"))
    assert shown["name"] == "ops"
    assert "DefaultModel" in shown["settings"]
    keys = [json.loads(line) for line in _ok(cli, "apikey", "list", "--tenant", "ops", "--json")
            .splitlines()]  # fmt: skip
    assert [(k["createdBy"], k["revokedAtUtc"]) for k in keys] == [("ana", None)]
    signing = [json.loads(line) for line in _ok(cli, "keys", "list", "--json").splitlines()]
    assert "active" in {k["state"] for k in signing}
    assert _ok(cli, "number", "list", "--tenant", "ops", "--json") == ""
    routes = [json.loads(line) for line in _ok(cli, "route", "show", "ops", "--json").splitlines()]
    assert routes[-1]["table"] == "default"
    assert _ok(cli, "linen", "laundries", "ops", "--json") == ""
    assert _ok(cli, "webhook", "list", "--tenant", "ops", "--json") == ""
    # Without --json: tab-separated text, one record per line.
    assert _ok(cli, "tenant", "list").split("\t")[1:3] == ["ops", "ops.test"]
