"""``switchboard wallet credential list|revoke``: the staff credentials a tenant issued."""

from __future__ import annotations

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.commands import tenant_item_command, tenant_list_command
from switchboard.identity.issuance import status
from switchboard.identity.issuance.models import IssuedCredential
from switchboard.kit.clock import iso_utc
from switchboard.kit.errors import BadRequest
from switchboard.runtime import Runtime
from switchboard.tenants.models import Tenant

Listed = tuple[IssuedCredential, str]


@click.group("credential")
def credential_cli() -> None:
    """Staff credentials issued to wallets (OpenID4VCI), and their revocation (status list)."""


def _state(row: IssuedCredential) -> str:
    return "valid" if row.revoked_at is None else f"revoked ({row.revoked_reason})"


def _view(item: Listed) -> dict[str, object]:
    row, list_id = item
    return {
        "id": row.id,
        "username": row.username,
        "statusList": list_id,
        "idx": row.idx,
        "issuedAt": iso_utc(row.issued_at),
        "expiresAt": iso_utc(row.expires_at),
        "revokedAt": iso_utc(row.revoked_at) if row.revoked_at else None,
        "revokedReason": row.revoked_reason,
    }


tenant_list_command(
    credential_cli,
    help="The staff credentials issued: id, username, expiry, state (newest first).",
    rows=lambda session, tenant: status.credentials(session, tenant=tenant),
    line=lambda item: (
        f"{item[0].id}\t{item[0].username}\t{iso_utc(item[0].expires_at)}\t{_state(item[0])}"
    ),
    view=_view,
)


async def _revoke(runtime: Runtime, session: AsyncSession, tenant: Tenant, item: str) -> None:
    if not item.isdigit():
        raise BadRequest("ID is the number `switchboard wallet credential list` shows")
    await status.revoke(session, tenant=tenant, credential_id=int(item), now=runtime.clock.now())


tenant_item_command(
    credential_cli, "revoke", argument="ID", act=_revoke, done="revoked",
    help="Revoke credential ID for good: its status list entry turns invalid, and the wallet "
    "sign-in refuses it.",
)  # fmt: skip
