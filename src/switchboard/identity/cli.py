"""``switchboard user|client|apikey|keys ...``"""

from __future__ import annotations

import datetime as dt

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import ROLES, ApiKey, BrowserSession, OidcClient, User
from switchboard.commands import (
    run_for_tenant,
    run_in_transaction,
    tenant_item_command,
    tenant_list_command,
)
from switchboard.identity import accounts, clients, lockout, service, sessions
from switchboard.kit.cli import json_flag, print_json, read_secret_stdin
from switchboard.kit.clock import iso_utc
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant


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


@user_cli.command("set-sip")
@click.argument("username")
@click.option("--tenant", required=True)
@click.option("--uri", default=None, help="sip: or sips: URI where the bridge rings the user")
@click.option("--clear", is_flag=True, help="Remove the user's SIP address")
def user_set_sip(username: str, tenant: str, uri: str | None, clear: bool) -> None:
    """Set (--uri) or clear (--clear) where office-tab calls for USERNAME ring."""
    if (uri is None) == (not clear):
        raise click.UsageError("give exactly one of --uri and --clear")

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        user = await service.set_sip_uri(session, tenant_id=row.id, username=username, uri=uri)
        click.echo(f"{user.username}\t{user.sip_uri or '-'}")

    run_in_transaction(work)


@user_cli.command("set-email")
@click.argument("username")
@click.option("--tenant", required=True)
@click.option("--email", default=None, help="The address (omit with --clear)")
@click.option("--verified", is_flag=True, help="The address is known to belong to the user")
@click.option("--clear", is_flag=True, help="Remove the user's address")
def user_set_email(
    username: str, tenant: str, email: str | None, verified: bool, clear: bool
) -> None:
    """Set (--email, optionally --verified) or clear (--clear) the address of USERNAME."""
    if (email is None) == (not clear):
        raise click.UsageError("give exactly one of --email and --clear")

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        user = await service.set_email(
            session, tenant_id=row.id, username=username, email=email, verified=verified
        )
        state = "verified" if user.email_verified else "unverified"
        click.echo(f"{user.username}\t{user.email or '-'}\t{state if user.email else '-'}")

    run_in_transaction(work)


@user_cli.command("set-password")
@click.argument("username")
@click.option("--tenant", required=True)
@click.option("--password-stdin", is_flag=True, required=True, help="Read the password from stdin")
def user_set_password(username: str, tenant: str, password_stdin: bool) -> None:
    """Give USERNAME a new password (read from standard input); its refresh tokens end."""
    password = read_secret_stdin()

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        await service.set_password(
            session, tenant_id=row.id, username=username, password=password,
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        click.echo(f"password set\t{username}")

    run_in_transaction(work)


def _switch(name: str, disabled: bool, help: str) -> None:
    async def act(runtime: Runtime, session: AsyncSession, tenant: Tenant, item: str) -> None:
        await accounts.set_disabled(
            session, tenant_id=tenant.id, username=item, disabled=disabled, clock=runtime.clock
        )

    tenant_item_command(user_cli, name, argument="USERNAME", help=help, act=act, done=f"{name}d")


_switch(
    "disable", True, "Disable USERNAME: its tokens and API keys stop working on their next use."
)
_switch("enable", False, "Enable USERNAME again.")


def _user_view(user: User, now: dt.datetime, browsers: int) -> dict[str, object]:
    locked = user.locked_until is not None and user.locked_until > now
    return {
        "username": user.username, "role": user.role, "disabled": user.disabled,
        "createdAtUtc": iso_utc(user.created_at), "email": user.email,
        "failedSignIns": user.failed_logins,
        "lockedUntilUtc": iso_utc(user.locked_until) if locked and user.locked_until else None,
        "lockedBrowsers": browsers,
    }  # fmt: skip


@user_cli.command("list")
@click.option("--tenant", required=True)
@json_flag
def user_list(tenant: str, as_json: bool) -> None:
    """One line per user: username, role, disabled or enabled, created, email, failed sign-ins,
    until when the user is locked out (decision 0006) and how many of the user's browsers are
    (decision 0031)."""

    async def work(runtime: Runtime, session: AsyncSession, row: Tenant) -> None:
        now = runtime.clock.now()
        browsers = await lockout.locked_devices(session, tenant_id=row.id, now=now)
        for user in await service.list_users(session, tenant_id=row.id):
            view = _user_view(user, now, browsers.get(user.id, 0))
            if as_json:
                print_json(view)
            else:
                view["disabled"] = "disabled" if user.disabled else "enabled"
                click.echo("\t".join("-" if v is None else str(v) for v in view.values()))

    run_for_tenant(tenant, work)


async def _unlock(runtime: Runtime, session: AsyncSession, tenant: Tenant, item: str) -> None:
    await service.unlock_user(session, tenant_id=tenant.id, username=item)


tenant_item_command(
    user_cli, "unlock", argument="USERNAME", act=_unlock, done="unlocked",
    help="Lift the sign-in lockout of USERNAME and forget its failed attempts, those of its "
    "browsers included (decisions 0006, 0031).",
)  # fmt: skip


async def _sign_out_everywhere(
    runtime: Runtime, session: AsyncSession, tenant: Tenant, item: str
) -> None:
    await service.sign_out_everywhere(
        session, tenant_id=tenant.id, username=item, clock=runtime.clock
    )


tenant_item_command(
    user_cli, "sign-out-everywhere", argument="USERNAME", act=_sign_out_everywhere,
    done="signed out everywhere",
    help="End every session of USERNAME (web apps, identity provider, refresh tokens); the "
    "password and API keys stay.",
)  # fmt: skip


def _session_view(found: BrowserSession) -> dict[str, object]:
    return {
        "sid": found.sid, "startedAtUtc": iso_utc(found.auth_time),
        "expiresAtUtc": iso_utc(found.expires_at), "address": found.address,
        "userAgent": found.user_agent,
    }  # fmt: skip


@user_cli.command("sessions")
@click.argument("username")
@click.option("--tenant", required=True)
@json_flag
def user_sessions(username: str, tenant: str, as_json: bool) -> None:
    """List the live identity provider sessions of USERNAME, newest first: sid, started,
    expires, address and user agent (decision 0605)."""

    async def work(runtime: Runtime, session: AsyncSession, row: Tenant) -> None:
        found = await sessions.list_sessions(
            session, tenant_id=row.id, username=username, clock=runtime.clock
        )
        for item in found:
            if as_json:
                print_json(_session_view(item))
            else:
                view = _session_view(item)
                click.echo("\t".join(str(view[k]) or "-" for k in view))

    run_for_tenant(tenant, work)


@user_cli.command("end-session")
@click.argument("username")
@click.argument("sid")
@click.option("--tenant", required=True)
def user_end_session(username: str, sid: str, tenant: str) -> None:
    """End the session SID of USERNAME (as listed by `user sessions`): its web app sessions and
    refresh tokens end, and that browser signs in again with the password. A SID that begins
    with '-' (older sessions have such) goes after `--`:
    `end-session --tenant T -- USERNAME SID`."""

    async def work(runtime: Runtime, session: AsyncSession, row: Tenant) -> None:
        await sessions.end_session(
            session, tenant_id=row.id, username=username, sid=sid, clock=runtime.clock
        )
        click.echo(f"ended\t{sid}")

    run_for_tenant(tenant, work)


@user_cli.command("set-role")
@click.argument("username")
@click.option("--tenant", required=True)
@click.option("--role", type=click.Choice(ROLES), required=True)
def user_set_role(username: str, tenant: str, role: str) -> None:
    """Change the role of USERNAME; in force on its next request, live tokens included."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        await service.set_role(session, tenant_id=row.id, username=username, role=role)
        click.echo(f"{username}\t{role}")

    run_in_transaction(work)


async def _delete_user(runtime: Runtime, session: AsyncSession, tenant: Tenant, item: str) -> None:
    await accounts.delete_user(session, tenant_id=tenant.id, username=item, clock=runtime.clock)


tenant_item_command(
    user_cli, "delete", argument="USERNAME", act=_delete_user, done="deleted",
    help="Delete USERNAME with its API keys; its tokens stop working on their next use.",
)  # fmt: skip


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


def _key_line(item: tuple[ApiKey, str]) -> str:
    key, owner = item
    revoked = iso_utc(key.revoked_at) or "-"
    return f"{key.id}\t{key.prefix}\t{owner}\t{iso_utc(key.created_at)}\t{revoked}"


def _key_view(item: tuple[ApiKey, str]) -> dict[str, object]:
    key, owner = item
    return {
        "id": key.id, "prefix": key.prefix, "createdBy": owner,
        "createdAtUtc": iso_utc(key.created_at), "revokedAtUtc": iso_utc(key.revoked_at),
    }  # fmt: skip


tenant_list_command(
    apikey_cli,
    help="One line per key: id, prefix, owner, created, revoked.",
    rows=lambda session, tenant: service.list_api_keys(session, tenant_id=tenant.id),
    line=_key_line,
    view=_key_view,
)


async def _revoke_key(runtime: Runtime, session: AsyncSession, tenant: Tenant, item: str) -> None:
    await service.revoke_api_key(session, tenant_id=tenant.id, key_id=item, clock=runtime.clock)


tenant_item_command(
    apikey_cli, "revoke", argument="KEY_ID", act=_revoke_key, done="revoked",
    help="Revoke one key; the others keep working.",
)  # fmt: skip


@click.group("keys")
def keys_cli() -> None:
    """Token signing keys: rotate without invalidating live tokens, then retire old ones."""


@keys_cli.command("list")
@json_flag
def keys_list(as_json: bool) -> None:
    """One line per signing key: kid, state (active, published, retired), created."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        for key in await runtime.keyring.list_keys(session):
            state = "active" if key.active else ("retired" if key.retired_at else "published")
            if as_json:
                print_json(
                    {"kid": key.kid, "state": state, "createdAtUtc": iso_utc(key.created_at)}
                )
                continue
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
