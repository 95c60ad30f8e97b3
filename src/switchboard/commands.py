"""Operator commands: one command, one transaction on the platform's runtime.

The command groups of every feature (`switchboard tenant ...`, `switchboard webhook ...`) run
their work through these helpers, so a command is one transaction, an `ApiError` is one line on
standard error with exit status 2, and a tenant is named by ``--tenant``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.cli import json_flag, print_json
from switchboard.kit.errors import ApiError
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants.models import Tenant
from switchboard.tenants.service import require_by_name

T = TypeVar("T")
R = TypeVar("R")


def run_in_transaction(work: Callable[..., Awaitable[T]]) -> T:
    """Run ``work(runtime, session)`` in one transaction; an ApiError exits with status 2."""

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


def run_for_tenant(tenant: str, work: Callable[[Runtime, AsyncSession, Tenant], Awaitable[T]]) -> T:
    """``run_in_transaction`` for a command of one tenant, named by ``--tenant``."""

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
