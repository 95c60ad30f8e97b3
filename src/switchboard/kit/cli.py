"""Running one CLI command as one transaction, with plain, scriptable output."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import click
import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.errors import ApiError

if TYPE_CHECKING:
    from switchboard.runtime import Runtime
    from switchboard.tenants.models import Tenant

T = TypeVar("T")
R = TypeVar("R")


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
        name = prefix + str(error["loc"][0]).upper() if error["loc"] else "the settings"
        problems.append(f"{name}: {error['msg']}")
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


def run_for_tenant(tenant: str, work: Callable[[Runtime, AsyncSession, Tenant], Awaitable[T]]) -> T:
    """``run_in_transaction`` for a command of one tenant, named by ``--tenant``."""
    from switchboard.tenants.service import require_by_name

    async def inner(runtime: Runtime, session: AsyncSession) -> T:
        return await work(runtime, session, await require_by_name(session, tenant))

    return run_in_transaction(inner)


def tenant_list_command(
    group: click.Group,
    *,
    help: str,
    rows: Callable[[AsyncSession, Tenant], Awaitable[Sequence[R]]],
    line: Callable[[R], str],
    view: Callable[[R], dict[str, object]],
) -> None:
    """Add ``list --tenant T [--json]`` to ``group``: one ``line`` (or ``view`` as JSON) a row."""

    @group.command("list", help=help)
    @click.option("--tenant", required=True)
    @json_flag
    def command(tenant: str, as_json: bool) -> None:
        async def work(runtime: Runtime, session: AsyncSession, row: Tenant) -> None:
            for item in await rows(session, row):
                if as_json:
                    print_json(view(item))
                else:
                    click.echo(line(item))

        run_for_tenant(tenant, work)


def tenant_item_command(
    group: click.Group,
    name: str,
    *,
    argument: str,
    help: str,
    act: Callable[[Runtime, AsyncSession, Tenant, str], Awaitable[object]],
    done: str,
) -> None:
    """Add ``NAME ARGUMENT --tenant T`` to ``group``: ``act`` on the item, then print
    ``done<TAB>item`` (remove, delete, revoke, enable, disable ...)."""

    @group.command(name, help=help)
    @click.argument("item", metavar=argument)
    @click.option("--tenant", required=True)
    def command(item: str, tenant: str) -> None:
        async def work(runtime: Runtime, session: AsyncSession, row: Tenant) -> None:
            await act(runtime, session, row, item)
            click.echo(f"{done}\t{item}")

        run_for_tenant(tenant, work)


def read_secret_stdin() -> str:
    value = sys.stdin.readline().rstrip("\r\n")
    if not value:
        click.echo("error: expected the secret on standard input", err=True)
        sys.exit(2)
    return value


__all__ = [
    "AsyncSession",
    "json_flag",
    "print_json",
    "read_secret_stdin",
    "run_for_tenant",
    "run_in_transaction",
    "tenant_item_command",
    "tenant_list_command",
]
