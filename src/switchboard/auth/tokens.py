"""Minting access, ID and refresh tokens."""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any

from joserfc import jwt
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.keys import Keyring
from switchboard.auth.models import RefreshToken, User
from switchboard.kit.clock import Clock
from switchboard.kit.crypto import random_token, sha256_hex


@dataclass(frozen=True, slots=True)
class TokenSet:
    access_token: str
    expires_in: int
    scope: str
    id_token: str | None
    refresh_token: str | None

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "scope": self.scope,
        }
        if self.id_token:
            body["id_token"] = self.id_token
        if self.refresh_token:
            body["refresh_token"] = self.refresh_token
        return body


class TokenIssuer:
    def __init__(
        self, *, keyring: Keyring, clock: Clock, access_ttl: int, refresh_ttl: int
    ) -> None:
        self._keyring = keyring
        self._clock = clock
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl

    async def issue(
        self,
        session: AsyncSession,
        *,
        issuer: str,
        tenant_name: str,
        user: User,
        client_id: str,
        scopes: list[str],
        family_id: str | None = None,
        id_claims: dict[str, Any] | None = None,
        sid: str | None = None,
        refresh_scope: str | None = None,
    ) -> TokenSet:
        """``id_claims`` adds to (or overrides) the ID token's claims: ``nonce``, ``auth_time``.
        ``sid``: the browser session signed in with, if any; the ID token carries it (OpenID
        Connect Front-/Back-Channel Logout's ``sid``) and the refresh token remembers it.
        ``refresh_scope``: a refresh grant's new refresh token keeps the scope of the one it
        replaces, whatever narrower scope the access token was asked for (RFC 6749 §6).

        With a refresh token, the access token names its family as ``grant_id``: revoking the
        family (``/oidc.ashx/revoke``, a reused refresh token, signing out) ends the access
        tokens of the grant too, since every use of one looks the family up (decision 0034)."""
        kid, key = await self._keyring.ensure_signer(session)
        now = int(self._clock.timestamp())
        scope = " ".join(scopes)
        grant_id = None
        if refresh_scope is not None or "offline_access" in scopes:
            grant_id = family_id or secrets.token_hex(16)
        common = {
            "iss": issuer,
            "sub": str(user.id),
            "aud": client_id,
            "iat": now,
            "exp": now + self.access_ttl,
            "tenant": tenant_name,
            "role": user.role,
            "preferred_username": user.username,
        }
        header = {"alg": "RS256", "kid": kid, "typ": "JWT"}
        access_claims: dict[str, Any] = {
            **common,
            "nbf": now,
            "jti": secrets.token_hex(16),
            "client_id": client_id,
            "scope": scope,
            "token_use": "access",
        }
        if grant_id is not None:
            access_claims["grant_id"] = grant_id
        access = jwt.encode(header, access_claims, key)
        id_token = None
        auth_time = int((id_claims or {}).get("auth_time", now))
        if "openid" in scopes:
            claims: dict[str, Any] = {**common, "auth_time": auth_time}
            if sid is not None:
                claims["sid"] = sid
            if "email" in scopes and user.email:
                claims.update(email=user.email, email_verified=user.email_verified)
            id_token = jwt.encode(header, {**claims, **(id_claims or {}), "token_use": "id"}, key)
        refresh = None
        if grant_id is not None:
            refresh = await self._new_refresh_token(
                session, user=user, client_id=client_id, scope=refresh_scope or scope,
                family_id=grant_id, sid=sid, auth_time=auth_time,
            )  # fmt: skip
        return TokenSet(access, self.access_ttl, scope, id_token, refresh)

    async def _new_refresh_token(
        self,
        session: AsyncSession,
        *,
        user: User,
        client_id: str,
        scope: str,
        family_id: str,
        sid: str | None,
        auth_time: int,
    ) -> str:
        token = random_token("rt_", 32)
        now = self._clock.now()
        session.add(
            RefreshToken(
                token_hash=sha256_hex(token),
                family_id=family_id,
                tenant_id=user.tenant_id,
                user_id=user.id,
                client_id=client_id,
                scope=scope,
                created_at=now,
                expires_at=now + dt.timedelta(seconds=self.refresh_ttl),
                sid=sid,
                auth_time=dt.datetime.fromtimestamp(auth_time, dt.UTC),
            )
        )
        await session.flush()
        return token
