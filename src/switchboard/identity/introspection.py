"""Token introspection (RFC 7662): a resource server asks whether a token is valid now.

A resource server outside the platform that checks our JWTs by their signature alone does not
see a revoked grant, a disabled user or a deleted client; it asks here instead. An access token
is active exactly when the platform's own bearer check would take it on the Host's tenant
(``Authenticator.own_access_token``), so the two cannot disagree. A refresh token is active
while the token endpoint would still rotate it (decision 0036).

Anything else answers ``active: false`` alone, whatever it is: unknown, malformed, forged,
expired, another tenant's, an ID token, an API key, an external issuer's token. The caller
learns nothing more from a token that is not active (RFC 7662 §2.2).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.bearer import Authenticator
from switchboard.auth.models import OidcClient, RefreshToken, User
from switchboard.identity.schemas import ACCESS_TYPE, REFRESH_TYPE, TokenIntrospection
from switchboard.kit.crypto import sha256_hex
from switchboard.kit.errors import Unauthorized
from switchboard.tenants.models import Tenant


async def introspect(
    session: AsyncSession,
    *,
    authenticator: Authenticator,
    tenant: Tenant,
    token: str,
    now: dt.datetime,
) -> TokenIntrospection:
    """What ``tenant`` knows of ``token`` now. Its kind is told by its form (access tokens are
    JWTs, refresh tokens opaque), so a ``token_type_hint`` is not needed to find it."""
    if token.count(".") == 2:
        return await _access_token(session, authenticator, tenant=tenant, token=token)
    return await _refresh_token(session, tenant=tenant, token=token, now=now)


async def _access_token(
    session: AsyncSession, authenticator: Authenticator, *, tenant: Tenant, token: str
) -> TokenIntrospection:
    try:
        caller, claims = await authenticator.own_access_token(session, token)
    except Unauthorized:
        return TokenIntrospection(active=False)
    if caller.tenant_id != tenant.id:
        return TokenIntrospection(active=False)  # valid, but on another tenant's hosts
    aud = claims.get("aud")
    return TokenIntrospection(
        active=True,
        scope=str(claims.get("scope", "")),
        client_id=_text(claims.get("client_id")),
        username=caller.username,
        token_type=ACCESS_TYPE,
        exp=_time(claims.get("exp")),
        iat=_time(claims.get("iat")),
        nbf=_time(claims.get("nbf")),
        sub=caller.subject,
        aud=aud if isinstance(aud, str) else None,
        iss=_text(claims.get("iss")),
        jti=_text(claims.get("jti")),
        tenant=caller.tenant_name,
        role=caller.role,
    )


async def _refresh_token(
    session: AsyncSession, *, tenant: Tenant, token: str, now: dt.datetime
) -> TokenIntrospection:
    """Active while the refresh grant would rotate it: neither used (rotated) nor revoked nor
    expired, its user enabled and its client still registered."""
    client_known = exists().where(
        OidcClient.tenant_id == tenant.id, OidcClient.client_id == RefreshToken.client_id
    )
    stmt = (
        select(RefreshToken, User.username)
        .join(User, User.id == RefreshToken.user_id)
        .where(
            RefreshToken.token_hash == sha256_hex(token),
            RefreshToken.tenant_id == tenant.id,
            User.tenant_id == tenant.id,
            User.disabled.is_(False),
            client_known,
        )
    )
    found = (await session.execute(stmt)).first()
    if found is None:
        return TokenIntrospection(active=False)
    row, username = found
    if row.used_at is not None or row.revoked_at is not None or row.expires_at <= now:
        return TokenIntrospection(active=False)
    return TokenIntrospection(
        active=True,
        scope=row.scope,
        client_id=row.client_id,
        username=username,
        token_type=REFRESH_TYPE,
        exp=int(row.expires_at.timestamp()),
        iat=int(row.created_at.timestamp()),
        sub=str(row.user_id),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _time(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) else None
