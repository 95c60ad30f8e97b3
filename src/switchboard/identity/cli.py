"""``switchboard user|client|apikey|keys ...``"""

from __future__ import annotations

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.identity import clients, service
from switchboard.identity.models import ROLES, OidcClient
from switchboard.kit.cli import read_secret_stdin, run_in_transaction
from switchboard.kit.clock import iso_utc
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants


@click.group("user")
def user_cli() -> None:
    """Users of a tenant (Argon2id password hashes)."""


@user_cli.command("create")
@click.argument("username")
@click.option("--tenant", required=True)
@click.option("--role", type=click.Choice(ROLES), required=True)
@click.option("--password-stdin", is_flag=True, required=True, help="Read the password from stdin")
def user_create(username: str, tenant: str, role: str, password_stdin: bool) -> None:
    """Create USERNAME in a tenant; the password is read from standard input."""
    password = read_secret_stdin()

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        user = await service.create_user(
            session, tenant=row, username=username, password=password, role=role,
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        click.echo(f"{user.id}\t{user.username}\t{user.role}")

    run_in_transaction(work)


@click.group("client")
def client_cli() -> None:
    """Registered OIDC clients of a tenant."""


@client_cli.command("create")
@click.argument("client_id")
@click.option("--tenant", required=True)
@click.option("--redirect-uri", "redirect_uris", multiple=True, help="Where codes may be sent")
@click.option(
    "--post-logout-redirect-uri", "logout_uris", multiple=True, help="Where logout may return"
)
@click.option("--confidential", is_flag=True, help="Give the client a secret (printed once)")
def client_create(
    client_id: str,
    tenant: str,
    redirect_uris: tuple[str, ...],
    logout_uris: tuple[str, ...],
    confidential: bool,
) -> None:
    """Register CLIENT_ID for a tenant; with --confidential print ``<client_id>\t<secret>``."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        client = await clients.create_client(
            session, tenant=row, client_id=client_id, clock=runtime.clock,
            redirect_uris=redirect_uris, post_logout_redirect_uris=logout_uris,
        )  # fmt: skip
        if confidential:
            click.echo(f"{client.client_id}\t{clients.new_secret(client)}")
        else:
            click.echo(client.client_id)

    run_in_transaction(work)


@client_cli.command("set-uris")
@click.argument("client_id")
@click.option("--tenant", required=True)
@click.option("--redirect-uri", "redirect_uris", multiple=True)
@click.option("--post-logout-redirect-uri", "logout_uris", multiple=True)
def client_set_uris(
    client_id: str, tenant: str, redirect_uris: tuple[str, ...], logout_uris: tuple[str, ...]
) -> None:
    """Replace the client's redirect URIs and post-logout redirect URIs (none given: none kept)."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        client = await clients.require_client(session, tenant_id=row.id, client_id=client_id)
        await clients.set_uris(session, client, clients.REDIRECT, redirect_uris)
        await clients.set_uris(session, client, clients.POST_LOGOUT, logout_uris)
        await _echo_client(session, client)

    run_in_transaction(work)


@client_cli.command("secret")
@click.argument("client_id")
@click.option("--tenant", required=True)
def client_secret(client_id: str, tenant: str) -> None:
    """Give the client a new secret (it becomes confidential) and print it once."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        client = await clients.require_client(session, tenant_id=row.id, client_id=client_id)
        click.echo(f"{client.client_id}\t{clients.new_secret(client)}")

    run_in_transaction(work)


@client_cli.command("list")
@click.option("--tenant", required=True)
def client_list(tenant: str) -> None:
    """One line per client: id, public|confidential, redirect URIs, post-logout URIs."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        for client in await clients.list_clients(session, tenant_id=row.id):
            await _echo_client(session, client)

    run_in_transaction(work)


async def _echo_client(session: AsyncSession, client: OidcClient) -> None:
    kind = "confidential" if client.secret_hash else "public"
    redirects = ",".join(await clients.uris_of(session, client, clients.REDIRECT)) or "-"
    logouts = ",".join(await clients.uris_of(session, client, clients.POST_LOGOUT)) or "-"
    click.echo(f"{client.client_id}\t{kind}\t{redirects}\t{logouts}")


@click.group("apikey")
def apikey_cli() -> None:
    """API keys (ak_...): shown once, stored as SHA-256 hashes."""


@apikey_cli.command("create")
@click.option("--tenant", required=True)
@click.option("--user", "username", required=True, help="The admin who owns the key")
@click.option("--name", default="", help="Operator label")
def apikey_create(tenant: str, username: str, name: str) -> None:
    """Mint a key and print it once: ``<id>\\t<key>``."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        user = await service.get_user(session, tenant_id=row.id, username=username)
        key, plaintext = await service.create_api_key(
            session, tenant_id=row.id, user=user, name=name, clock=runtime.clock
        )
        click.echo(f"{key.id}\t{plaintext}")

    run_in_transaction(work)


@apikey_cli.command("list")
@click.option("--tenant", required=True)
def apikey_list(tenant: str) -> None:
    """One line per key: id, prefix, owner, created, revoked."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        for key, owner in await service.list_api_keys(session, tenant_id=row.id):
            revoked = iso_utc(key.revoked_at) or "-"
            click.echo(f"{key.id}\t{key.prefix}\t{owner}\t{iso_utc(key.created_at)}\t{revoked}")

    run_in_transaction(work)


@apikey_cli.command("revoke")
@click.argument("key_id")
@click.option("--tenant", required=True)
def apikey_revoke(key_id: str, tenant: str) -> None:
    """Revoke one key; the others keep working."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        await service.revoke_api_key(session, tenant_id=row.id, key_id=key_id, clock=runtime.clock)
        click.echo(f"revoked\t{key_id}")

    run_in_transaction(work)


@click.group("keys")
def keys_cli() -> None:
    """Token signing keys: rotate without invalidating live tokens, then retire old ones."""


@keys_cli.command("list")
def keys_list() -> None:
    async def work(runtime: Runtime, session: AsyncSession) -> None:
        for key in await runtime.keyring.list_keys(session):
            state = "active" if key.active else ("retired" if key.retired_at else "published")
            click.echo(f"{key.kid}\t{state}\t{iso_utc(key.created_at)}")

    run_in_transaction(work)


@keys_cli.command("rotate")
def keys_rotate() -> None:
    """Make a new key the signer; older keys stay in the JWKS until retired."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        click.echo(await runtime.keyring.rotate(session))

    run_in_transaction(work)


@keys_cli.command("retire")
@click.argument("kid")
def keys_retire(kid: str) -> None:
    """Remove a non-active key from the JWKS (tokens it signed stop verifying)."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        await runtime.keyring.retire(session, kid)
        click.echo(f"retired\t{kid}")

    run_in_transaction(work)
