"""The operator CLI in-process (click's runner) against the test database."""

from __future__ import annotations

from click.testing import CliRunner

from switchboard.cli import main


def ok(cli: CliRunner, *args: str, stdin: str | None = None) -> str:
    """Run a command that must succeed; its output."""
    result = cli.invoke(main, list(args), input=stdin)
    assert result.exit_code == 0, result.output
    return result.output
