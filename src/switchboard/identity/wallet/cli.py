"""``switchboard wallet issuer add|list|remove``: the PID issuers a tenant trusts."""

from __future__ import annotations

from typing import IO

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.identity.wallet import repository, service
from switchboard.identity.wallet.models import TrustedIssuer
from switchboard.kit.cli import json_flag, print_json, run_in_transaction
from switchboard.kit.clock import iso_utc
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants


@click.group("wallet")
def wallet_cli() -> None:
    """Signing in with the EU Digital Identity Wallet (OpenID4VP), per tenant."""


@wallet_cli.group("issuer")
def issuer_cli() -> None:
    """Trusted PID issuers: their public keys and the claim naming the user."""


@issuer_cli.command("add")
@click.argument("name")
@click.option("--tenant", required=True)
@click.option(
    "--jwk-file", type=click.File("r"), required=True, help="The issuer's public JWK ('-': stdin)"
)
@click.option(
    "--username-claim", required=True, help="The PID claim holding the username to link to"
)
def issuer_add(name: str, tenant: str, jwk_file: IO[str], username_claim: str) -> None:
    """Trust issuer NAME's key; its PIDs sign in the user whose username the claim holds."""
    jwk = jwk_file.read()

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        issuer = await service.add_issuer(
            session, tenant=row, name=name, jwk=jwk, username_claim=username_claim,
            now=runtime.clock.now(),
        )  # fmt: skip
        click.echo(f"{issuer.name}\t{issuer.kid}\t{issuer.username_claim}")

    run_in_transaction(work)


def _view(row: TrustedIssuer) -> dict[str, object]:
    return {
        "name": row.name,
        "kid": row.kid,
        "jwk": row.jwk,
        "usernameClaim": row.username_claim,
        "createdAt": iso_utc(row.created_at),
    }


@issuer_cli.command("list")
@click.option("--tenant", required=True)
@json_flag
def issuer_list(tenant: str, as_json: bool) -> None:
    """The tenant's trusted issuers: name, kid, username claim."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        for issuer in await repository.list_issuers(session, tenant_id=row.id):
            if as_json:
                print_json(_view(issuer))
            else:
                click.echo(f"{issuer.name}\t{issuer.kid}\t{issuer.username_claim}")

    run_in_transaction(work)


@issuer_cli.command("remove")
@click.argument("name")
@click.option("--tenant", required=True)
def issuer_remove(name: str, tenant: str) -> None:
    """Stop trusting issuer NAME (its PIDs no longer sign anyone in)."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        await service.remove_issuer(session, tenant=row, name=name)
        click.echo(f"removed\t{name}")

    run_in_transaction(work)
