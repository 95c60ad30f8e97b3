"""``switchboard tenant ...``: tenants are the identity provider's realms, so the command group
lives with it. Creating one registers its web clients (the console and the linen web app), and
every command runs on the runtime, which is built on the tenants: ``tenants/`` itself stays
below both."""

from __future__ import annotations

import sys

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.commands import run_in_transaction
from switchboard.identity import clients
from switchboard.kit.cli import json_flag, print_json
from switchboard.runtime import Runtime
from switchboard.tenants import repository, service
from switchboard.tenants.config import TenantConfig, stored_problems


@click.group("tenant")
def tenant_cli() -> None:
    """Create and configure tenants."""


@tenant_cli.command("create")
@click.argument("name")
@click.option("--domain", "domains", multiple=True, required=True, help="Host that maps here")
def create(name: str, domains: tuple[str, ...]) -> None:
    """Create tenant NAME served on the given domains."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await service.create_tenant(
            session, name=name, domains=list(domains), clock=runtime.clock, box=runtime.box
        )
        await clients.ensure_web_clients(
            session, tenant=tenant, scheme=runtime.settings.public_scheme, clock=runtime.clock
        )
        click.echo(f"{tenant.id}\t{tenant.name}")

    run_in_transaction(work)


@tenant_cli.command("add-domain")
@click.argument("name")
@click.argument("domains", nargs=-1, required=True)
def add_domain(name: str, domains: tuple[str, ...]) -> None:
    """Serve tenant NAME on DOMAINS too (host names, with a port where one is used); the
    console's and the linen web app's sign-in addresses follow. Prints each domain added."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await service.require_by_name(session, name)
        added = await service.add_domains(session, tenant, list(domains))
        await clients.follow_domains(
            session, tenant=tenant, scheme=runtime.settings.public_scheme, added=added
        )
        for domain in added:
            click.echo(f"added\t{domain}")

    run_in_transaction(work)


@tenant_cli.command("remove-domain")
@click.argument("name")
@click.argument("domain")
def remove_domain(name: str, domain: str) -> None:
    """Stop serving tenant NAME on DOMAIN (not its last one); the web apps' sign-in addresses
    on it go too."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await service.require_by_name(session, name)
        removed = await service.remove_domain(session, tenant, domain)
        await clients.follow_domains(
            session, tenant=tenant, scheme=runtime.settings.public_scheme, removed=[removed]
        )
        click.echo(f"removed\t{removed}")

    run_in_transaction(work)


@tenant_cli.command("list")
@json_flag
def list_(as_json: bool) -> None:
    """One line per tenant: id, name, domains."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        for tenant in await repository.list_all(session):
            names = await repository.domains_of(session, tenant.id)
            primary = await service.is_primary(session, tenant.id, runtime.settings.primary_domain)
            if as_json:
                record = {"id": tenant.id, "name": tenant.name, "domains": list(names)}
                print_json({**record, "primary": primary})
                continue
            domains = ",".join(names)
            click.echo(f"{tenant.id}\t{tenant.name}\t{domains}" + ("\tprimary" if primary else ""))

    run_in_transaction(work)


@tenant_cli.command("set")
@click.argument("name")
@click.argument("key")
@click.argument("value")
def set_(name: str, key: str, value: str) -> None:
    """Set a tenant setting, e.g. ``Phone:Sfu:AutoPromoteHumanCount 8``."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await service.require_by_name(session, name)
        stored = await service.set_setting(session, tenant, key, value)
        click.echo(f"{key}\t{stored}")

    run_in_transaction(work)


@tenant_cli.command("show")
@click.argument("name")
@json_flag
def show(name: str, as_json: bool) -> None:
    """Print a tenant's effective settings (defaults applied, tunables snapped)."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await service.require_by_name(session, name)
        config = TenantConfig.from_settings(tenant.settings)
        settings: dict[str, object] = {
            "DefaultModel": config.default_model,
            "DefaultVoice": config.default_voice,
            "DefaultLanguage": config.default_language,
            "DefaultTrunkId": config.default_trunk_id,
            **{f"Phone:Sfu:{key}": value for key, value in config.sfu.items()},
            "Voicemail:Message": config.voicemail_message,
            **{f"Prompts:{slug}": text for slug, text in sorted(config.prompts.items())},
        }
        if as_json:
            print_json({"name": tenant.name, "settings": settings})
            return
        for key, value in settings.items():
            click.echo(f"{key}\t{value:g}" if isinstance(value, float) else f"{key}\t{value}")

    run_in_transaction(work)


@tenant_cli.command("check")
def check() -> None:
    """List the stored settings (of every tenant) that break their rule and are therefore read
    as their default: values stored before the rule existed, or written to the database by
    hand. One line each: tenant, key, rule; set them again with `set`. Exit status 1 when
    there is one."""

    async def work(runtime: Runtime, session: AsyncSession) -> int:
        found = 0
        for tenant in await repository.list_all(session):
            for problem in stored_problems(tenant.settings):
                found += 1
                key, _, rule = problem.partition(": ")
                click.echo(f"{tenant.name}\t{key}\t{rule}")
        return found

    if run_in_transaction(work):
        sys.exit(1)


@tenant_cli.command("signaling-secret")
@click.argument("name")
def signaling_secret(name: str) -> None:
    """Print the key of the tenant's ``X-Platform-Admin-Signature`` (whitelist HMAC)."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await service.require_by_name(session, name)
        click.echo(runtime.box.open(tenant.signaling_secret))

    run_in_transaction(work)
