"""``switchboard route show|resolve`` against the same tables the API edits."""

from __future__ import annotations

import orjson
from click.testing import CliRunner

from switchboard.cli import main


def _ok(cli: CliRunner, *args: str) -> str:
    result = cli.invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_show_and_resolve(cli: CliRunner) -> None:
    _ok(cli, "tenant", "create", "ops", "--domain", "ops.test")
    _ok(cli, "tenant", "set", "ops", "DefaultTrunkId", "main")
    assert _ok(cli, "route", "show", "ops").splitlines() == [
        "inbound\t0\t*\t\tadmin",
        "default\tmain",
    ]
    outbound = orjson.loads(_ok(cli, "route", "resolve", "ops", "--number", "0049301"))
    assert outbound == {
        "number": "0049301",
        "normalisedNumber": "+49301",
        "index": None,
        "match": None,
        "trunkIds": ["main"],
        "usedDefault": True,
        "reason": "no row matches '+49301'; the tenant's defaultTrunkId is used",
    }
    inbound = orjson.loads(_ok(cli, "route", "resolve", "ops", "--did", "100"))
    assert (inbound["index"], inbound["user"], inbound["fromNumber"]) == (0, "admin", "anonymous")
    both = cli.invoke(main, ["route", "resolve", "ops", "--did", "1", "--number", "2"])
    assert both.exit_code == 2
    unknown = cli.invoke(main, ["route", "show", "nobody"])
    assert unknown.exit_code == 2
