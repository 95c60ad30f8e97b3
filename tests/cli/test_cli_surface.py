"""The CLI's own surface: --version, -h, --json on listing and show commands, a fast --help."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from switchboard import __version__
from switchboard.cli import main
from tests.cli.conftest import ok
from tests.ports import free_port

HEAVY = ("sqlalchemy", "fastapi", "starlette", "pydantic", "uvicorn", "httpx", "aiohttp")


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
    ok(cli, "tenant", "create", "ops", "--domain", "ops.test")
    ok(cli, "user", "create", "ana", "--tenant", "ops", "--role", "admin", "--password-stdin",
        stdin="correct horse battery\n")  # fmt: skip
    ok(cli, "apikey", "create", "--tenant", "ops", "--user", "ana", "--name", "ci")
    ok(cli, "keys", "rotate")

    tenants = [json.loads(line) for line in ok(cli, "tenant", "list", "--json").splitlines()]
    assert tenants == [{"id": tenants[0]["id"], "name": "ops", "domains": ["ops.test"],
                        "primary": True}]  # fmt: skip
    shown = json.loads(ok(cli, "tenant", "show", "ops", "--json"))
    assert shown["name"] == "ops"
    assert "DefaultModel" in shown["settings"]
    keys = [json.loads(line) for line in ok(cli, "apikey", "list", "--tenant", "ops", "--json")
            .splitlines()]  # fmt: skip
    assert [(k["createdBy"], k["revokedAtUtc"]) for k in keys] == [("ana", None)]
    signing = [json.loads(line) for line in ok(cli, "keys", "list", "--json").splitlines()]
    assert "active" in {k["state"] for k in signing}
    assert ok(cli, "number", "list", "--tenant", "ops", "--json") == ""
    routes = [json.loads(line) for line in ok(cli, "route", "show", "ops", "--json").splitlines()]
    assert routes[-1]["table"] == "default"
    assert ok(cli, "linen", "laundries", "ops", "--json") == ""
    assert ok(cli, "webhook", "list", "--tenant", "ops", "--json") == ""
    # Without --json: tab-separated text, one record per line.
    assert ok(cli, "tenant", "list").split("\t")[1:3] == ["ops", "ops.test"]


def test_a_database_without_tables_or_unreachable_is_one_clear_line(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a driver's traceback: what is wrong and, for an unmigrated database, what to run."""
    empty = (
        f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
        if db_url.startswith("sqlite")
        else str(make_url(db_url).set(database="switchboard_no_such_database"))
    )
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", empty)
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(main, ["tenant", "list"])
    assert result.exit_code == 2
    expected = (
        "error: the database's tables are missing or older than this version: run "
        "`switchboard migrate`"
        if db_url.startswith("sqlite")
        else 'error: the database refused the command: database "switchboard_no_such_database" '
        "does not exist"
    )
    assert result.output.strip() == expected
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [["tenant", "list"], ["migrate"], ["relay", "acl", "list"]])
def test_a_database_server_that_cannot_be_reached_is_one_clear_line(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing listens on the port: the driver's connect error, as one line with exit 2."""
    url = f"postgresql+asyncpg://127.0.0.1:{free_port()}/switchboard"
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", url)
    monkeypatch.setenv("SWITCHBOARD_RELAY_DATABASE_URL", url)
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 2, result.output
    [line] = result.output.splitlines()
    assert line.startswith("error: the database cannot be reached: "), line


@pytest.mark.parametrize(
    ("variable", "value", "command", "expected"),
    [
        ("SWITCHBOARD_ROOM_MAX_PEERS", "1", ["tenant", "list"],
         "error: SWITCHBOARD_ROOM_MAX_PEERS: Input should be greater than or equal to 2"),
        ("SWITCHBOARD_RELAY_TURN_PORT", "0", ["relay", "acl", "list"],
         "error: SWITCHBOARD_RELAY_TURN_PORT: Input should be greater than or equal to 1"),
    ],
)  # fmt: skip
def test_a_setting_out_of_bounds_is_one_line_naming_its_variable(
    variable: str, value: str, command: list[str], expected: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv(variable, value)
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 2, result.output
    assert result.output.strip() == expected
