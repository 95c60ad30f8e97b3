"""Plain, scriptable command-line output, and one-line reasons for failures an operator meets.

Running a command as one transaction on the platform's runtime is `switchboard.commands`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

import click
import orjson


def database_problem(exc: BaseException) -> str | None:
    """What an operator should read when a command fails on the database itself (unreachable,
    missing, not migrated), instead of a driver's traceback; ``None`` for any other error."""
    from sqlalchemy.exc import DBAPIError

    if isinstance(exc, OSError) and _while_connecting(exc):
        # The driver's own connect error (refused, unknown host, timeout): SQLAlchemy passes
        # asyncpg's OSError through unwrapped.
        return f"the database cannot be reached: {exc}"
    if not isinstance(exc, DBAPIError):
        return None
    lines = str(exc.orig if exc.orig is not None else exc).strip().splitlines() or [""]
    reason = lines[0].split(">: ", 1)[-1] if lines[0].startswith("<class ") else lines[0]
    sqlite_missing = reason.startswith(("no such table", "no such column"))
    postgres_missing = reason.startswith(("relation ", "column ")) and reason.endswith(
        "does not exist"
    )
    if sqlite_missing or postgres_missing:
        return (
            "the database's tables are missing or older than this version: "
            "run `switchboard migrate`"
        )
    return f"the database refused the command: {reason}"


# The settings classes and the prefix of their environment variables.
SETTINGS_PREFIXES = {"Settings": "SWITCHBOARD_", "RelaySettings": "SWITCHBOARD_RELAY_"}


def settings_problem(exc: BaseException) -> str | None:
    """What an operator should read when a ``SWITCHBOARD_*`` variable holds a value its setting
    refuses: the variable's name and the rule, instead of pydantic's traceback; ``None`` for
    any other error."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError) or exc.title not in SETTINGS_PREFIXES:
        return None
    prefix = SETTINGS_PREFIXES[exc.title]
    problems = []
    for error in exc.errors(include_url=False):
        if error["loc"]:
            problems.append(f"{prefix}{str(error['loc'][0]).upper()}: {error['msg']}")
        else:  # a rule over several settings: its message names them
            problems.append(error["msg"].removeprefix("Value error, "))
    return "; ".join(problems)


def _while_connecting(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while SQLAlchemy opened a database connection."""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "raw_connection" and "sqlalchemy" in code.co_filename:
            return True
        tb = tb.tb_next
    return False


def print_json(value: object) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode())


F = TypeVar("F", bound=Callable[..., object])


def json_flag(command: F) -> F:
    """``--json`` on a listing or show command: one JSON object per line instead of text."""
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line")(
        command
    )


def read_secret_stdin() -> str:
    value = sys.stdin.readline().rstrip("\r\n")
    if not value:
        click.echo("error: expected the secret on standard input", err=True)
        sys.exit(2)
    return value


__all__ = [
    "database_problem",
    "json_flag",
    "print_json",
    "read_secret_stdin",
    "settings_problem",
]
