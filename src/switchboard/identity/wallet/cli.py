"""``switchboard wallet issuer add|list|remove``: the PID issuers a tenant trusts."""

from __future__ import annotations

from typing import IO

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.commands import run_in_transaction, tenant_item_command, tenant_list_command
from switchboard.identity.issuance.cli import credential_cli
from switchboard.identity.wallet import repository, service
from switchboard.identity.wallet.models import TrustedIssuer
from switchboard.kit.clock import iso_utc
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant


@click.group("wallet")
def wallet_cli() -> None:
    """Signing in with the EU Digital Identity Wallet (OpenID4VP), per tenant."""


wallet_cli.add_command(credential_cli)


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


tenant_list_command(
    issuer_cli,
    help="The tenant's trusted issuers: name, kid, username claim.",
    rows=lambda session, tenant: repository.list_issuers(session, tenant_id=tenant.id),
    line=lambda row: f"{row.name}\t{row.kid}\t{row.username_claim}",
    view=_view,
)


async def _remove(runtime: Runtime, session: AsyncSession, tenant: Tenant, item: str) -> None:
    await service.remove_issuer(session, tenant=tenant, name=item)


tenant_item_command(
    issuer_cli, "remove", argument="NAME", act=_remove, done="removed",
    help="Stop trusting issuer NAME (its PIDs no longer sign anyone in).",
)  # fmt: skip
