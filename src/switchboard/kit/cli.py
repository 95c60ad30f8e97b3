"""Running one CLI command as one transaction, with plain, scriptable output."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

import click
import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.errors import ApiError

T = TypeVar("T")


def run_in_transaction(work: Callable[..., Awaitable[T]]) -> T:
    """Run ``work(runtime, session)`` in one transaction; an ApiError exits with status 2."""
    from switchboard.runtime import Runtime
    from switchboard.settings import Settings

    async def main() -> T:
        runtime = Runtime(Settings())
        try:
            async with runtime.db.transaction() as session:
                return await work(runtime, session)
        finally:
            await runtime.db.dispose()

    try:
        return asyncio.run(main())
    except ApiError as exc:
        click.echo(f"error: {exc.description}", err=True)
        sys.exit(2)


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


__all__ = ["AsyncSession", "json_flag", "print_json", "read_secret_stdin", "run_in_transaction"]
