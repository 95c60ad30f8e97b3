"""``switchboard federation add|update|list|disable|enable|remove|check``: a tenant's external
providers. Only here may a client secret be read from an environment variable or a file, and
only inside the boundary the operator's settings draw (decision 0024)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import ROLES
from switchboard.commands import run_in_transaction, tenant_item_command, tenant_list_command
from switchboard.identity.federation import repository, service
from switchboard.identity.federation.models import FIRST_LOGIN, ExternalProvider
from switchboard.identity.federation.secrets import (
    KEEP,
    ClientSecret,
    ClientSecrets,
    Keep,
    SecretReference,
    SecretValue,
)
from switchboard.kit.cli import read_secret_stdin
from switchboard.kit.clock import iso_utc
from switchboard.runtime import Runtime
from switchboard.tenants import repository as tenant_rows
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant


@click.group("federation")
def federation_cli() -> None:
    """External OpenID Connect providers users may sign in with (per tenant)."""


SECRET_HELP = {
    "stdin": "Read the client secret itself from standard input (stored sealed)",
    "file": "Read it from this file at each use (under SWITCHBOARD_FEDERATION_SECRETS_DIR)",
    "env": "Read it from this variable at each use (named SWITCHBOARD_FEDERATION_SECRET_*)",
}


def _secret(
    *,
    stdin: bool,
    file: str | None,
    env: str | None,
    none: bool = False,
    default: ClientSecret | Keep,
) -> ClientSecret | Keep:
    """The client secret the options give (``default`` when none does)."""
    if sum(map(bool, (stdin, file, env, none))) > 1:
        raise click.UsageError("give at most one way of setting the client secret")
    if stdin:
        return SecretValue(read_secret_stdin())
    if file:
        return SecretReference(f"file:{Path(file).absolute()}")
    if env:
        return SecretReference(f"env:{env}")
    return None if none else default


@federation_cli.command("add")
@click.argument("name")
@click.option("--tenant", required=True)
@click.option("--issuer", required=True, help="The provider's issuer URL (discovery is read)")
@click.option("--client-id", required=True, help="This identity provider's client id there")
@click.option("--client-secret-stdin", is_flag=True, help=SECRET_HELP["stdin"])
@click.option("--client-secret-file", type=click.Path(dir_okay=False), help=SECRET_HELP["file"])
@click.option("--client-secret-env", default=None, help=SECRET_HELP["env"])
@click.option("--display-name", default="", help='Shown as "Sign in with <display name>"')
@click.option("--scopes", default=service.DEFAULT_SCOPES, show_default=True)
@click.option("--username-claim", default="preferred_username", show_default=True)
@click.option("--role-claim", default=None, help="Claim holding admin|power-user|user")
@click.option("--default-role", type=click.Choice(ROLES), default="user", show_default=True)
@click.option("--allowed-domain", "allowed_domains", multiple=True, help="Email domain allowed")
@click.option("--first-login", type=click.Choice(FIRST_LOGIN), default="refuse", show_default=True)
def federation_add(
    name: str, tenant: str, issuer: str, client_id: str, client_secret_stdin: bool,
    client_secret_file: str | None, client_secret_env: str | None, display_name: str,
    scopes: str, username_claim: str, role_claim: str | None, default_role: str,
    allowed_domains: tuple[str, ...], first_login: str,
) -> None:  # fmt: skip
    """Add provider NAME (without a client secret option: a public client)."""
    secret = _secret(
        stdin=client_secret_stdin, file=client_secret_file, env=client_secret_env, default=None
    )
    spec = service.ProviderSpec(
        name=name, issuer=issuer, client_id=client_id, secret=secret,
        display_name=display_name, scopes=scopes, username_claim=username_claim,
        role_claim=role_claim, default_role=default_role,
        allowed_domains=tuple(d.lower() for d in allowed_domains), first_login=first_login,
    )  # fmt: skip

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        provider = await service.add_provider(
            session, tenant=row, spec=spec, client_secrets=ClientSecrets.of(runtime),
            now=runtime.clock.now(), operator=True,
        )  # fmt: skip
        callback = f"<scheme>://<tenant host>/oidc.ashx/federation/{provider.name}/callback"
        click.echo(f"{provider.name}\t{provider.issuer}\tredirect URI to register: {callback}")

    run_in_transaction(work)


@federation_cli.command("update")
@click.argument("name")
@click.option("--tenant", required=True)
@click.option("--issuer", default=None)
@click.option("--client-id", default=None)
@click.option("--client-secret-stdin", is_flag=True, help=SECRET_HELP["stdin"])
@click.option("--client-secret-file", type=click.Path(dir_okay=False), help=SECRET_HELP["file"])
@click.option("--client-secret-env", default=None, help=SECRET_HELP["env"])
@click.option("--no-client-secret", is_flag=True, help="A public client from now on")
@click.option("--display-name", default=None)
@click.option("--scopes", default=None)
@click.option("--username-claim", default=None)
@click.option("--role-claim", default=None, help="'' for none")
@click.option("--default-role", type=click.Choice(ROLES), default=None)
@click.option("--allowed-domain", "allowed_domains", multiple=True, help="Replaces the list")
@click.option("--any-domain", is_flag=True, help="Allow every email domain again")
@click.option("--first-login", type=click.Choice(FIRST_LOGIN), default=None)
def federation_update(
    name: str, tenant: str, issuer: str | None, client_id: str | None, client_secret_stdin: bool,
    client_secret_file: str | None, client_secret_env: str | None, no_client_secret: bool,
    display_name: str | None, scopes: str | None, username_claim: str | None,
    role_claim: str | None, default_role: str | None, allowed_domains: tuple[str, ...],
    any_domain: bool, first_login: str | None,
) -> None:  # fmt: skip
    """Change provider NAME: only the options given change; its account links stay."""
    secret = _secret(
        stdin=client_secret_stdin, file=client_secret_file, env=client_secret_env,
        none=no_client_secret, default=KEEP,
    )  # fmt: skip

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        current = await service.require_provider(session, tenant=row, name=name)
        domains = tuple(d.lower() for d in allowed_domains) or tuple(current.allowed_domains)
        spec = service.ProviderSpec(
            name=current.name, issuer=issuer or current.issuer,
            client_id=client_id or current.client_id, secret=secret,
            display_name=display_name or current.display_name,
            scopes=scopes or current.scopes,
            username_claim=username_claim or current.username_claim,
            role_claim=current.role_claim if role_claim is None else role_claim or None,
            default_role=default_role or current.default_role,
            allowed_domains=() if any_domain else domains,
            first_login=first_login or current.first_login,
        )  # fmt: skip
        updated = await service.update_provider(
            session, tenant=row, spec=spec, client_secrets=ClientSecrets.of(runtime),
            operator=True,
        )  # fmt: skip
        click.echo(f"updated\t{updated.name}")

    run_in_transaction(work)


@federation_cli.command("check")
def federation_check() -> None:
    """List the providers (of every tenant) whose client secret will not be used: a reference
    outside SWITCHBOARD_FEDERATION_SECRET_* variables and files under
    SWITCHBOARD_FEDERATION_SECRETS_DIR, or a sealed value that no longer opens. One line each:
    tenant, provider, why; their sign-ins are refused until the secret is set again with
    `update`. Exit status 1 when there is one."""

    async def work(runtime: Runtime, session: AsyncSession) -> int:
        client_secrets = ClientSecrets.of(runtime)
        found = 0
        for tenant in await tenant_rows.list_all(session):
            for row in await repository.list_providers(session, tenant_id=tenant.id):
                problem = service.secret_problem(row, client_secrets)
                if problem is not None:
                    found += 1
                    click.echo(f"{tenant.name}\t{row.name}\t{problem}")
        return found

    if run_in_transaction(work):
        sys.exit(1)


def _view(row: ExternalProvider) -> dict[str, object]:
    return {
        "name": row.name,
        "displayName": row.display_name,
        "issuer": row.issuer,
        "clientId": row.client_id,
        "secret": service.secret_kind(row),
        "scopes": row.scopes,
        "usernameClaim": row.username_claim,
        "roleClaim": row.role_claim,
        "defaultRole": row.default_role,
        "allowedDomains": row.allowed_domains,
        "firstLogin": row.first_login,
        "enabled": row.enabled,
        "createdAt": iso_utc(row.created_at),
    }


def _line(row: ExternalProvider) -> str:
    state = "enabled" if row.enabled else "disabled"
    return f"{row.name}\t{state}\t{row.issuer}\t{row.client_id}\t{row.first_login}"


tenant_list_command(
    federation_cli,
    help="The tenant's providers: name, enabled|disabled, issuer, client id, first-login policy.",
    rows=lambda session, tenant: repository.list_providers(session, tenant_id=tenant.id),
    line=_line,
    view=_view,
)


def _switch(name: str, enabled: bool, help: str) -> None:
    async def act(runtime: Runtime, session: AsyncSession, tenant: Tenant, item: str) -> None:
        await service.set_enabled(session, tenant=tenant, name=item, enabled=enabled)

    tenant_item_command(
        federation_cli, name, argument="PROVIDER", help=help, act=act, done=f"{name}d"
    )


_switch("enable", True, "Offer PROVIDER again on the login page.")
_switch("disable", False, "Stop offering PROVIDER; sign-ins under way through it are refused.")


async def _remove(runtime: Runtime, session: AsyncSession, tenant: Tenant, item: str) -> None:
    await service.remove_provider(session, tenant=tenant, name=item)


tenant_item_command(
    federation_cli, "remove", argument="PROVIDER", act=_remove, done="removed",
    help="Delete PROVIDER and its account links (the linked users stay).",
)  # fmt: skip
