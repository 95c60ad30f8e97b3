"""The operator CLI: ``switchboard <command>``. Output is plain and scriptable."""

from __future__ import annotations

import logging
import secrets
from urllib.parse import urlsplit

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.bridge.cli import sim_cli
from switchboard.identity import clients
from switchboard.identity import service as identity
from switchboard.identity.cli import apikey_cli, client_cli, keys_cli, user_cli
from switchboard.kit.cli import run_in_transaction
from switchboard.linen.cli import linen_cli
from switchboard.platform.numbers.cli import number_cli
from switchboard.platform.routing.cli import route_cli
from switchboard.platform.webhooks.cli import webhook_cli
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants
from switchboard.tenants.cli import tenant_cli
from switchboard.workers.cli import worker_cli


@click.group()
def main() -> None:
    """switchboard: AI phone calls, identity provider and linen portal."""


@main.command()
def migrate() -> None:
    """Apply every pending database migration."""
    from switchboard.migrate import upgrade

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
    from switchboard.kit.logging import configure_logging

    settings = Settings()
    if no_workers:
        settings = settings.model_copy(update={"run_workers": False})
    configure_logging(settings.log_level)
    click.echo(f"operator console: {settings.public_base_url}/admin/")
    uvicorn.run(
        create_app(settings), host=host, port=port, log_config=None, access_log=False,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
    )  # fmt: skip


@main.command()
@click.option("--tenant", "name", default="demo", show_default=True)
def demo(name: str) -> None:
    """Create the demo tenant (admin, clients `cli` and `console`) unless it exists; print the
    password."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        from switchboard.tenants import repository

        if await repository.get_by_name(session, name) is not None:
            click.echo(f"tenant {name!r} exists; its admin password was printed when it was made")
            return
        domain = urlsplit(runtime.settings.public_base_url).netloc
        domains = [domain]
        if domain.startswith("127.0.0.1"):
            domains.append(domain.replace("127.0.0.1", "localhost", 1))
        tenant = await tenants.create_tenant(
            session, name=name, domains=domains, clock=runtime.clock, box=runtime.box
        )
        password = secrets.token_urlsafe(12)
        await identity.create_user(
            session, tenant=tenant, username="admin", password=password, role="admin",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        await clients.create_client(session, tenant=tenant, client_id="cli", clock=runtime.clock)
        console = await clients.ensure_console_client(
            session, tenant=tenant, base_url=runtime.settings.public_base_url, clock=runtime.clock
        )
        click.echo(f"demo tenant {name!r} on {', '.join(domains)}")
        click.echo("  client_id: cli (password grant), console (browser sign-in)")
        for uri in await clients.uris_of(session, console, clients.REDIRECT):
            click.echo(f"  console redirect URI: {uri}")
        click.echo("  username:  admin")
        click.echo(f"  password:  {password}   (shown once)")

    run_in_transaction(work)


for group in (
    tenant_cli,
    user_cli,
    client_cli,
    apikey_cli,
    keys_cli,
    worker_cli,
    number_cli,
    webhook_cli,
    sim_cli,
    route_cli,
    linen_cli,
):
    main.add_command(group)

logging.getLogger("switchboard").addHandler(logging.NullHandler())
