"""`switchboard relay acl add|remove|list` on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from switchboard.cli import main


@pytest.fixture
def cli(db_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("SWITCHBOARD_RELAY_DATABASE_URL", db_url)
    return CliRunner()


def _run(cli: CliRunner, *args: str) -> tuple[int, str]:
    result = cli.invoke(main, ["relay", "acl", *args])
    return result.exit_code, result.output


def _rules(cli: CliRunner) -> list[dict[str, object]]:
    """``acl list --json``: one JSON object per line, like every listing of the CLI."""
    code, out = _run(cli, "list", "--json")
    assert code == 0, out
    rules: list[dict[str, object]] = [json.loads(line) for line in out.splitlines()]
    assert all(isinstance(rule, dict) for rule in rules), out
    return rules


def test_add_list_remove(cli: CliRunner) -> None:
    code, out = _run(
        cli, "add", "cidr", "203.0.113.0/24", "--scope", "sip-inbound", "--note", "x" * 300
    )
    assert code == 0, out
    rule_id = int(out.split("\t")[0])
    assert _run(cli, "add", "ip", "::ffff:198.51.100.7")[0] == 0
    rules = _rules(cli)
    assert [(r["subject"], r["value"], r["scope"]) for r in rules] == [
        ("cidr", "203.0.113.0/24", "sip-inbound"),
        ("ip", "198.51.100.7", "any"),
    ]
    assert rules[0]["note"] == "x" * 200
    code, out = _run(cli, "list")
    assert "203.0.113.0/24\tsip-inbound" in out
    assert _run(cli, "remove", str(rule_id)) == (0, f"removed\t{rule_id}\n")
    assert [r["value"] for r in _rules(cli)] == ["198.51.100.7"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "cidr", "203.0.113.1/24"], "did you mean 203.0.113.0/24"),
        (["add", "ip", "203.0.113.0/24"], "invalid ip"),
        (["add", "ip", "not-an-ip"], "invalid ip"),
        (["remove", "999"], "no ACL rule with id 999"),
        (["add", "ip", "127.0.0.1"], "never blocked"),
        (["add", "cidr", "10.1.0.0/16"], "never blocked"),
        (["add", "ip", "::ffff:192.168.1.9"], "never blocked"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    cli: CliRunner, args: list[str], message: str
) -> None:
    code, out = _run(cli, *args)
    assert code == 2
    assert message in out
    assert _rules(cli) == []


def test_unknown_subject_or_scope_and_duplicates_are_refused(cli: CliRunner) -> None:
    assert _run(cli, "add", "tenant", "acme")[0] == 2
    assert _run(cli, "add", "ip", "203.0.113.5", "--scope", "tenant")[0] == 2
    assert _run(cli, "add", "ip", "203.0.113.5")[0] == 0
    code, out = _run(cli, "add", "ip", "203.0.113.5")
    assert code == 2
    assert "already blocked" in out
    assert _run(cli, "add", "ip", "203.0.113.5", "--scope", "pstn-outbound")[0] == 0
    assert len(_rules(cli)) == 2


def test_credentials_command(monkeypatch: pytest.MonkeyPatch) -> None:
    cli = CliRunner()
    monkeypatch.setenv("SWITCHBOARD_RELAY_SECRET", "s3cret-for-tests")
    result = cli.invoke(
        main, ["relay", "credentials", "--label", "room-1", "--url", "turns:relay.example:443"]
    )
    assert result.exit_code == 0, result.output
    [server] = json.loads(result.output)
    assert server["urls"] == ["turns:relay.example:443"]
    assert server["username"].endswith(":room-1")
    assert "s3cret" not in result.output
    monkeypatch.setenv("SWITCHBOARD_RELAY_SECRET", "")
    result = cli.invoke(main, ["relay", "credentials", "--url", "turn:relay.example:3478"])
    assert result.exit_code == 2


def test_serve_refuses_a_short_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_RELAY_SECRET", "tiny-secret")
    result = CliRunner().invoke(main, ["relay", "serve"])
    assert result.exit_code == 2
    assert "at least 16 characters" in result.output
    assert "tiny-secret" not in result.output
