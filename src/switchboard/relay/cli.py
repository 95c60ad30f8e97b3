"""``switchboard relay ...``: serve the relay, manage the operator ACL, mint TURN credentials."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit import heap
from switchboard.kit.cli import json_flag, print_json
from switchboard.kit.clock import SystemClock
from switchboard.kit.db import Database
from switchboard.relay import service
from switchboard.relay.acl import SCOPES, SUBJECTS
from switchboard.relay.credentials import ice_servers
from switchboard.relay.settings import RelaySettings

T = TypeVar("T")


def _database_url(settings: RelaySettings) -> str:
    if settings.database_url:
        return settings.database_url
    from switchboard.settings import Settings

    return Settings().resolved_database_url


def _in_transaction(work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    async def main() -> T:
        database = Database(_database_url(RelaySettings()))
        try:
            async with database.transaction() as session:
                return await work(session)
        finally:
            await database.dispose()

    try:
        return asyncio.run(main())
    except service.AclError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


@click.group("relay")
def relay_cli() -> None:
    """The TURN relay (coturn behind the guard) and its operator ACL."""


@relay_cli.command("serve")
def serve() -> None:
    """Write coturn's configuration, run it behind the guard, and enforce the rules."""
    from prometheus_client import start_http_server

    from switchboard.kit.logging import configure_logging
    from switchboard.relay.server import (
        DESCRIPTORS_PER_CONNECTION,
        RelayServer,
        raise_descriptor_limit,
    )
    from switchboard.settings import Settings

    settings = RelaySettings()
    log_level = Settings().log_level

    async def main() -> None:
        database = Database(_database_url(settings))
        try:
            server = RelayServer(settings, database=database, clock=SystemClock())
            # the log is set up once the settings are accepted: a refused start changes nothing
            configure_logging(log_level)
            limit = raise_descriptor_limit()
            if limit < DESCRIPTORS_PER_CONNECTION * settings.max_connections:
                logging.getLogger("switchboard.relay").warning(
                    "%d open descriptors allowed: fewer than SWITCHBOARD_RELAY_MAX_CONNECTIONS "
                    "(%d) relayed connections need; raise the hard limit (LimitNOFILE=)",
                    limit,
                    settings.max_connections,
                )
            await serve_until_signalled(server)
        finally:
            await database.dispose()

    async def serve_until_signalled(server: RelayServer) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        try:
            await server.start()
            heap.settle()
            if settings.metrics_port:
                start_http_server(settings.metrics_port, settings.metrics_host, server.registry)
            ticking = asyncio.create_task(server.run_forever())
            await stop.wait()
            ticking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticking
        finally:
            await server.stop()

    try:
        asyncio.run(main())
    except (ValueError, RuntimeError, OSError) as exc:  # bad settings, nft refused, port taken
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


@relay_cli.group("acl")
def acl_cli() -> None:
    """The operator ACL blacklist (spec 8.2.2); a running relay picks changes up by itself."""


@acl_cli.command("add")
@click.argument("subject", type=click.Choice(SUBJECTS))
@click.argument("value")
@click.option("--scope", type=click.Choice(SCOPES), default="any", show_default=True)
@click.option("--note", default="", help="Why the rule exists (cut to 200 characters)")
def acl_add(subject: str, value: str, scope: str, note: str) -> None:
    """Block an IP address or a CIDR network, e.g. `acl add cidr 203.0.113.0/24`."""

    async def work(session: AsyncSession) -> None:
        rule = await service.add_rule(
            session, subject=subject, value=value, scope=scope, note=note, clock=SystemClock()
        )
        click.echo(f"{rule.id}\t{rule.subject}\t{rule.value}\t{rule.scope}")

    _in_transaction(work)


@acl_cli.command("remove")
@click.argument("rule_id", type=int)
def acl_remove(rule_id: int) -> None:
    """Remove a rule by the id that `acl list` shows."""

    async def work(session: AsyncSession) -> None:
        await service.remove_rule(session, rule_id=rule_id)
        click.echo(f"removed\t{rule_id}")

    _in_transaction(work)


@acl_cli.command("list")
@json_flag
def acl_list(as_json: bool) -> None:
    """List the rules: id, subject, value, scope, note."""

    async def work(session: AsyncSession) -> None:
        for r in await service.list_rules(session):
            if as_json:
                print_json({"id": r.id, "subject": r.subject, "value": r.value,
                            "scope": r.scope, "note": r.note})  # fmt: skip
            else:
                click.echo(f"{r.id}\t{r.subject}\t{r.value}\t{r.scope}\t{r.note}")

    _in_transaction(work)


@relay_cli.command("credentials")
@click.option("--label", default="room", show_default=True, help="Who the credential is for")
@click.option("--ttl", default=3600, show_default=True, type=click.IntRange(60, 86400))
@click.option("--url", "urls", multiple=True, required=True, help="A turn:/turns: URL (repeat)")
def credentials(label: str, ttl: int, urls: tuple[str, ...]) -> None:
    """Print an `iceServers` value with a time-limited TURN credential (JSON)."""
    settings = RelaySettings()
    try:
        servers = ice_servers(
            urls=urls, secret=settings.secret, label=label, clock=SystemClock(), ttl=ttl
        )
    except ValueError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    print_json(servers)
