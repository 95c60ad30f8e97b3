"""Token revocation (RFC 7009): a client gives up a refresh or access token it was issued.

A refresh token is revoked with its whole family, the grant it belongs to. An access token that
came with a refresh token names that family (its ``grant_id`` claim), so revoking either ends
the grant: its refresh tokens at once, its access tokens on their next use, since the bearer
check looks the family up on every request (decision 0034). An access token issued without a
refresh token names no grant and stays valid until it expires.

Whatever is presented, the client learns nothing: a token of another client or tenant, an
unknown, malformed or expired one all leave everything as it was and answer like a revocation.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.bearer import Authenticator
from switchboard.auth.models import OidcClient, RefreshToken
from switchboard.identity.service import revoke_refresh_family
from switchboard.kit.crypto import sha256_hex
from switchboard.kit.errors import Unauthorized
from switchboard.tenants.models import Tenant

TOKEN_TYPE_HINTS = ("refresh_token", "access_token")


async def revoke(
    session: AsyncSession,
    *,
    tenant: Tenant,
    client: OidcClient,
    token: str,
    authenticator: Authenticator,
    now: dt.datetime,
) -> None:
    """Revoke the grant ``token`` belongs to, if ``client`` of ``tenant`` was issued it.

    The kind of token is told by its form (our refresh tokens are opaque, our access tokens
    JWTs), so the request's ``token_type_hint`` is not needed to find it: RFC 7009 §2.1 lets a
    server that tells the kind itself ignore the hint."""
    if token.count(".") == 2:
        grant = await _access_token_grant(session, token, authenticator=authenticator)
        if grant is None:
            return
        which = RefreshToken.family_id == grant
    else:
        which = RefreshToken.token_hash == sha256_hex(token)
    # Only a token issued to the client asking, in this tenant (RFC 7009 §2.1): a family is one
    # client's, in one tenant, so its first row tells.
    family = await session.scalar(
        select(RefreshToken.family_id)
        .where(
            which,
            RefreshToken.tenant_id == tenant.id,
            RefreshToken.client_id == client.client_id,
        )
        .limit(1)
    )
    if family is not None:
        await revoke_refresh_family(session, family_id=family, now=now)


async def _access_token_grant(
    session: AsyncSession, token: str, *, authenticator: Authenticator
) -> str | None:
    """The grant (refresh-token family) an unexpired access token of ours names, if any."""
    try:
        claims = await authenticator.own_access_claims(session, token)
    except Unauthorized:
        return None
    grant = claims.get("grant_id")
    return grant if isinstance(grant, str) and grant else None
