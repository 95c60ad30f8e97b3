"""The operator CLI: ``switchboard <command>``. Output is plain and scriptable."""

from __future__ import annotations

import importlib
import logging
import secrets
import sys
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import click

from switchboard import __version__

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from switchboard.runtime import Runtime

# Command groups by name: (module, attribute, one-line help). They are imported only when run,
# so `switchboard --help` answers without loading the web stack and the database drivers.
LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "tenant": (
        "switchboard.identity.tenant_cli",
        "tenant_cli",
        "Tenants, their domains and settings.",
    ),
    "user": ("switchboard.identity.cli", "user_cli", "Users of a tenant."),
    "client": ("switchboard.identity.cli", "client_cli", "Registered OIDC clients of a tenant."),
    "apikey": ("switchboard.identity.cli", "apikey_cli", "API keys (ak_...), shown once."),
    "keys": ("switchboard.identity.cli", "keys_cli", "Token signing keys."),
    "federation": (
        "switchboard.identity.federation.cli",
        "federation_cli",
        "External OpenID Connect providers to sign in with.",
    ),
    "wallet": (
        "switchboard.identity.wallet.cli",
        "wallet_cli",
        "EU Digital Identity Wallet sign-in: trusted PID issuers, issued staff credentials.",
    ),
    "worker": ("switchboard.workers.cli", "worker_cli", "Run the background workers."),
    "number": ("switchboard.platform.numbers.cli", "number_cli", "Virtual numbers."),
    "webhook": ("switchboard.platform.webhooks.cli", "webhook_cli", "Webhook subscriptions."),
    "sim": ("switchboard.platform.callbacks.cli", "sim_cli", "The simulated media bridge."),
    "room": ("switchboard.platform.rooms.cli", "room_cli", "Meeting rooms: list, lobby, SFU mode."),
    "route": ("switchboard.platform.routing.cli", "route_cli", "Routing tables and dry runs."),
    "linen": ("switchboard.linen.cli", "linen_cli", "Linen portal operations."),
    "bridge": ("switchboard.mediabridge.cli", "bridge_cli", "The media bridge: real SIP calls."),
    "relay": ("switchboard.relay.cli", "relay_cli", "The TURN relay and its guard."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS:
            module, attribute, _ = LAZY_COMMANDS[cmd_name]
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            from switchboard.kit.cli import database_problem, settings_problem

            problem = settings_problem(exc) or database_problem(exc)
            if problem is None:
                raise
            click.echo(f"error: {problem}", err=True)
            sys.exit(2)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, LAZY_COMMANDS[name][2]) for name in LAZY_COMMANDS]
        for name in super().list_commands(ctx):
            command = super().get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=70)))
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="switchboard")
def main() -> None:
    """switchboard: AI phone calls, identity provider and linen portal."""


@main.command()
def migrate() -> None:
    """Apply every pending database migration."""
    from switchboard.migrate import upgrade
    from switchboard.settings import Settings

    settings = Settings()
    if not settings.database_url:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.resolved_database_url)
    click.echo("migrated")


# Open console pages keep a server-sent event stream; they must not hold a stop for minutes.
SHUTDOWN_GRACE_SECONDS = 15


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--no-workers", is_flag=True, help="Serve HTTP only; run `switchboard worker` apart")
def serve(host: str, port: int, no_workers: bool) -> None:
    """Serve the identity provider, the platform API, the console and the linen portal."""
    import uvicorn

    from switchboard.app import create_app
    from switchboard.kit.httpprotocol import JsonErrorsProtocol
    from switchboard.kit.logging import configure_logging
    from switchboard.settings import Settings

    settings = Settings()
    if no_workers:
        settings = settings.model_copy(update={"run_workers": False})
    configure_logging(settings.log_level, settings.log_format)
    click.echo(f"operator console: {settings.public_base_url}/admin/")
    click.echo(f"linen portal:     {settings.public_base_url}/app/")
    uvicorn.run(
        create_app(settings), host=host, port=port, log_config=None, access_log=False,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS, ws="websockets-sansio",
        http=JsonErrorsProtocol,  # a request it cannot read: the API's error body, no-store
        # the signaling frame limit, enforced from a frame's header: a larger frame is never
        # buffered (uvicorn's default would hold 16 MiB of it before the room refuses it)
        ws_max_size=settings.room_max_message_bytes,
    )  # fmt: skip


@main.command()
@click.option("--tenant", "name", default="demo", show_default=True)
def demo(name: str) -> None:
    """Create the demo tenant (admin, clients `cli`, `console` and `linen`) and its linen data
    unless it exists, then print the password; a demo tenant that exists is served on the
    public base URL's domain too."""
    from switchboard.commands import run_in_transaction
    from switchboard.identity import clients
    from switchboard.identity import service as identity
    from switchboard.linen.demo import create_demo_linen
    from switchboard.tenants import repository
    from switchboard.tenants import service as tenants

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        domain = urlsplit(runtime.settings.public_base_url).netloc
        domains = [domain]
        if domain.startswith("127.0.0.1"):
            domains.append(domain.replace("127.0.0.1", "localhost", 1))
        existing = await repository.get_by_name(session, name)
        if existing is not None:
            # Served on this base URL's domains too (``make run PORT=N`` after another port).
            added = await tenants.add_domains(session, existing, domains)
            scheme = runtime.settings.public_scheme
            await clients.follow_domains(session, tenant=existing, scheme=scheme, added=added)
            click.echo(f"tenant {name!r} exists; its admin password was printed when it was made")
            if added:
                click.echo(f"  now also on {', '.join(added)}")
            return
        tenant = await tenants.create_tenant(
            session, name=name, domains=domains, clock=runtime.clock, box=runtime.box
        )
        password = secrets.token_urlsafe(12)
        await identity.create_user(
            session, tenant=tenant, username="admin", password=password, role="admin",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        await clients.create_client(session, tenant=tenant, client_id="cli", clock=runtime.clock)
        console = await clients.ensure_web_clients(
            session, tenant=tenant, scheme=runtime.settings.public_scheme, clock=runtime.clock
        )
        await create_demo_linen(session, tenant_id=tenant.id, clock=runtime.clock, box=runtime.box)
        click.echo(f"demo tenant {name!r} on {', '.join(domains)}")
        click.echo("  client_id: cli (password grant), console and linen (browser sign-in)")
        for uri in await clients.uris_of(session, console, clients.REDIRECT):
            click.echo(f"  console redirect URI: {uri}")
        click.echo(f"  linen portal: {runtime.settings.public_base_url}/app/")
        click.echo("  username:  admin")
        click.echo(f"  password:  {password}   (shown once)")

    run_in_transaction(work)


logging.getLogger("switchboard").addHandler(logging.NullHandler())
