"""Who is calling: an OIDC access token (ours or a trusted external issuer's) or an API key."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import RSAKey
from joserfc.jws import extract_compact
from sqlalchemy import exists, false, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.external import (
    ExternalIssuers,
    ExternalKeys,
    host_trust,
    jwks_fetch,
    peek,
)
from switchboard.auth.keycache import ApiKeyCache, CachedKey
from switchboard.auth.keys import Keyring
from switchboard.auth.models import ROLES, ApiKey, OidcClient, RefreshToken, User
from switchboard.kit.clock import Clock
from switchboard.kit.crypto import sha256_hex
from switchboard.kit.db import Database, after_end
from switchboard.kit.destinations import IPNetwork
from switchboard.kit.errors import Unauthorized
from switchboard.tenants import repository as tenants_repo
from switchboard.tenants import service as tenants
from switchboard.tenants.config import ExternalIssuer

log = logging.getLogger("switchboard.identity")

API_KEY_PREFIX = "ak_"
TOKEN_CACHE_MAX = 10_000
API_KEY_TOUCH_EVERY = 60.0
PRIMARY_LOOKUP_EVERY = 30.0


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated principal of a request."""

    tenant_id: int
    tenant_name: str
    subject: str
    username: str
    role: str
    method: Literal["oidc", "apikey", "external"]
    primary: bool
    # Unix time until which this verdict holds: a token's expiry, or the end of an API key's
    # verified-key cache entry (an answer built on it may be repeated until then, decision 0960)
    expires: float | None = None
    # the scopes of this identity provider's access token (empty for API keys and external
    # issuers' tokens); ``/oidc.ashx/userinfo`` answers by them
    scopes: frozenset[str] = frozenset()

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def is_super_admin(self) -> bool:
        """An admin of the primary tenant: super-admin on super-admin-gated endpoints."""
        return self.is_admin and self.primary


def issuer_for(scheme: str, host: str) -> str:
    return f"{scheme}://{host}/oidc.ashx"


def _role_from(value: Any) -> str | None:
    values = value if isinstance(value, list) else [value]
    for role in ROLES:  # the strongest role present wins
        if role in values:
            return role
    return None


@dataclass(frozen=True, slots=True)
class _Verified:
    """A token whose signature and times were checked, kept until ``expires``.

    ``audiences`` is set for our own tokens: their user and client are looked up on every use,
    and so is their ``grant`` (the refresh-token family they came with, if any), which must not
    have been revoked (decision 0034). ``trust`` is set for an external issuer's: the trust of
    its tenant it was verified under, which the tenant serving the request's Host must still
    place in the issuer on every use.
    """

    expires: float
    caller: Caller
    audiences: tuple[str, ...] | None
    trust: ExternalIssuer | None = None
    grant: str | None = None


def _audiences(value: Any) -> tuple[str, ...]:
    values = value if isinstance(value, list) else [value]
    audiences = tuple(str(v) for v in values if isinstance(v, str) and v)
    if not audiences:
        raise Unauthorized("the token names no audience")
    return audiences


def _touch_due(entry: CachedKey, now: float) -> bool:
    """Whether the key's last use is to be written (at most every ``API_KEY_TOUCH_EVERY``)."""
    return entry.last_used is None or now - entry.last_used > API_KEY_TOUCH_EVERY


def _key_caller(entry: CachedKey, *, primary: bool) -> Caller:
    return Caller(
        tenant_id=entry.tenant_id,
        tenant_name=entry.tenant_name,
        subject=str(entry.user_id),
        username=entry.username,
        role=entry.role,  # its user's: the admin surface while the user is an admin (0007)
        method="apikey",
        primary=primary,
        expires=entry.expires,
    )


def _retrieve(done: asyncio.Future[CachedKey]) -> None:
    """Mark a shared verification's error as seen: the request that ran it raises it itself."""
    if not done.cancelled():
        done.exception()


class Authenticator:
    def __init__(
        self,
        *,
        db: Database,
        keyring: Keyring,
        clock: Clock,
        scheme: str,
        primary_domain: str,
        jwks_ttl: int,
        api_key_cache_seconds: float = 2.0,
        issuer_allow_private: Sequence[IPNetwork] = (),
    ) -> None:
        self._db = db
        self._keyring = keyring
        self._clock = clock
        self._scheme = scheme
        self._primary_domain = primary_domain
        keys = ExternalKeys(ttl=jwks_ttl, clock=clock, fetch=jwks_fetch(issuer_allow_private))
        self._external = ExternalIssuers(db=db, keys=keys)
        self._tokens: dict[str, _Verified] = {}
        self._api_keys = ApiKeyCache(api_key_cache_seconds)
        self._primary: tuple[float, int | None] | None = None
        # Keys being verified: the revocation generation it began under, and its verdict.
        self._verifying: dict[str, tuple[int, asyncio.Future[CachedKey]]] = {}

    def forget_cached_tokens(self) -> None:
        self._tokens.clear()

    async def prepare(self, host: str, token: str) -> None:
        """Fetch what checking ``token`` on ``host`` needs from the network, before the request's
        transaction opens: the keys of the external issuer the Host's tenant trusts, when the
        token names it (decision 0029). ``authenticate`` never fetches; it refuses a token whose
        keys this could not bring. Never raises."""
        if token.startswith(API_KEY_PREFIX):
            return
        kept = self._tokens.get(token)
        if kept is not None and kept.trust is None:
            return  # one of our own tokens, verified before
        peeked = peek(token)
        if peeked is None:
            return
        header, claims = peeked
        kid = str(header.get("kid", ""))
        if self._keyring.public_key(kid) is not None:
            return  # signed by one of our own keys
        issuer = claims.get("iss")
        if isinstance(issuer, str) and issuer:
            await self._external.prepare(host, issuer, kid)

    async def authenticate(self, session: AsyncSession, token: str, *, host: str) -> Caller:
        """The caller of a bearer presented on ``host`` (the request's Host header): an external
        issuer's token counts only where the tenant serving the Host trusts its issuer."""
        if token.startswith(API_KEY_PREFIX):
            return await self._api_key(session, token)
        now = self._clock.timestamp()
        verified = self._tokens.get(token)
        if verified is not None and verified.expires <= now:
            del self._tokens[token]
            verified = None
        if verified is not None and verified.trust is not None:
            tenant, trust = await host_trust(session, host)
            if tenant is None or tenant.id != verified.caller.tenant_id or trust != verified.trust:
                del self._tokens[token]  # another host, or the tenant's trust changed
                verified = None
        if verified is None:
            verified = await self._jwt(session, token, now, host)
            if len(self._tokens) >= TOKEN_CACHE_MAX:
                self._tokens.pop(next(iter(self._tokens)))
            self._tokens[token] = verified
        if verified.audiences is None:
            return verified.caller
        return await self._current(session, verified.caller, verified.audiences, verified.grant)

    @staticmethod
    async def _current(
        session: AsyncSession, caller: Caller, audiences: tuple[str, ...], grant: str | None
    ) -> Caller:
        """Our own token's principal as the database knows it now (one indexed lookup): the
        user must still exist and be enabled, its role is the current one, the token's
        audience must still be a registered client of the tenant, and the grant it came with
        (its refresh-token family) must not have been revoked."""
        client_known = exists().where(
            OidcClient.tenant_id == caller.tenant_id, OidcClient.client_id.in_(audiences)
        )
        revoked = (
            exists().where(
                RefreshToken.family_id == grant,
                RefreshToken.tenant_id == caller.tenant_id,
                RefreshToken.revoked_at.is_not(None),
            )
            if grant is not None
            else false()
        )
        stmt = select(User.username, User.role, User.disabled, revoked).where(
            User.id == int(caller.subject), User.tenant_id == caller.tenant_id, client_known
        )
        row = (await session.execute(stmt)).first()
        if row is None:
            raise Unauthorized("the token's user or client is no longer registered")
        username, role, disabled, grant_revoked = row
        if disabled:
            raise Unauthorized("the token's user is disabled")
        if grant_revoked:
            raise Unauthorized("the token's grant was revoked")
        if role == caller.role and username == caller.username:
            return caller
        return dataclasses.replace(caller, role=role, username=username)

    def cached(self, token: str) -> Caller | None:
        """The caller of an API key verified within the cache's bound, when answering needs
        nothing of the database: no verification, last-use stamp or primary-tenant lookup is
        due. None otherwise (then ``authenticate`` in a transaction)."""
        if not token.startswith(API_KEY_PREFIX):
            return None
        stamp = self._clock.timestamp()
        entry = self._api_keys.get(sha256_hex(token), stamp)
        if entry is None or _touch_due(entry, stamp):
            return None
        primary = self._fresh_primary()
        if primary is None:
            return None
        return _key_caller(entry, primary=primary[1] == entry.tenant_id)

    async def _api_key(self, session: AsyncSession, token: str) -> Caller:
        key_hash = sha256_hex(token)
        now = self._clock.now()
        stamp = now.timestamp()
        entry = self._api_keys.get(key_hash, stamp)
        if entry is None:
            entry = await self._verify_once(session, key_hash, stamp)
        if _touch_due(entry, stamp):
            # Written in its own short transaction after the request's, however that ended (a
            # refused request used the key too): a read-only request never turns into a
            # writer, and a busy database never fails the request.
            entry.last_used = stamp
            after_end(session, functools.partial(self._touch_api_key, entry.key_id, now))
        return _key_caller(entry, primary=await self._is_primary(session, entry.tenant_id))

    async def _verify_once(self, session: AsyncSession, key_hash: str, now: float) -> CachedKey:
        """Verify a key that is not cached, once for all the requests that present it meanwhile:
        when an entry expires under load, every request in flight with that key missed it at
        once, and each ran the same lookup. A request joins a verification only if no
        revocation moved the generation since it began, so a verdict older than a revocation of
        this process is never shared (with the cache off, nothing is)."""
        while True:
            flight = self._verifying.get(key_hash)
            if flight is None or flight[0] != self._api_keys.generation():
                break
            try:
                return await asyncio.shield(flight[1])
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not flight[1].cancelled() or (current is not None and current.cancelling()):
                    raise
                # the request that was verifying went away: verify afresh
        if self._api_keys.ttl <= 0:
            return await self._verify_api_key(session, key_hash, now)
        done: asyncio.Future[CachedKey] = asyncio.get_running_loop().create_future()
        done.add_done_callback(_retrieve)
        self._verifying[key_hash] = (self._api_keys.generation(), done)
        try:
            entry = await self._verify_api_key(session, key_hash, now)
        except Exception as exc:
            done.set_exception(exc)
            raise
        except BaseException:
            done.cancel()
            raise
        finally:
            if self._verifying.get(key_hash, (0, None))[1] is done:
                del self._verifying[key_hash]
        self._api_keys.put(key_hash, entry)
        done.set_result(entry)
        return entry

    async def _verify_api_key(self, session: AsyncSession, key_hash: str, now: float) -> CachedKey:
        generation = self._api_keys.generation()  # read before the database is
        stmt = (
            select(ApiKey, User)
            .join(User, User.id == ApiKey.user_id)
            .where(ApiKey.key_hash == key_hash)
        )
        row = (await session.execute(stmt)).first()
        if row is None:
            raise Unauthorized("unknown API key")
        key, user = row
        if key.revoked_at is not None or user.disabled:
            raise Unauthorized("the API key was revoked")
        tenant = await tenants_repo.get_by_id(session, key.tenant_id)
        assert tenant is not None
        last_used = key.last_used_at.timestamp() if key.last_used_at is not None else None
        return CachedKey(
            key_id=key.id,
            tenant_id=tenant.id,
            tenant_name=tenant.name,
            user_id=user.id,
            username=user.username,
            role=user.role,
            expires=now + self._api_keys.ttl,
            generation=generation,
            last_used=last_used,
        )

    async def _touch_api_key(self, key_id: str, when: dt.datetime) -> None:
        try:
            async with self._db.transaction() as session:
                await session.execute(
                    update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=when)
                )
        except SQLAlchemyError:
            log.warning("could not record the last use of API key %s", key_id, exc_info=True)

    def _fresh_primary(self) -> tuple[float, int | None] | None:
        """The last lookup of the primary tenant (when, its id), unless one is due (at most
        every 30 s)."""
        if self._primary is None or time.monotonic() - self._primary[0] > PRIMARY_LOOKUP_EVERY:
            return None
        return self._primary

    async def _is_primary(self, session: AsyncSession, tenant_id: int) -> bool:
        """Whether the tenant owns the public base URL's host."""
        primary = self._fresh_primary()
        if primary is None:
            tenant = await tenants.resolve_host(session, self._primary_domain)
            primary = self._primary = (time.monotonic(), tenant.id if tenant else None)
        return primary[1] == tenant_id

    async def own_access_token(
        self, session: AsyncSession, token: str
    ) -> tuple[Caller, dict[str, Any]]:
        """An access token of this identity provider as the bearer check takes it now, and its
        claims: signature, times, issuer and tenant, then the user, client and grant as the
        database knows them (``_current``). Token introspection (RFC 7662) answers by it, so a
        resource server learns what a request to the platform would. Anything else (an API
        key, an external issuer's token, an ID token) raises ``Unauthorized``, as does a token
        the bearer check refuses. The verified-token cache is neither read nor filled."""
        if token.startswith(API_KEY_PREFIX):
            raise Unauthorized("an API key is no access token")
        key = await self._own_key(session, token)
        if key is None:
            raise Unauthorized("not signed by this identity provider")
        verified, claims = await self._own_token(session, token, key, self._clock.timestamp())
        assert verified.audiences is not None
        caller = await self._current(session, verified.caller, verified.audiences, verified.grant)
        return caller, claims

    async def own_access_claims(self, session: AsyncSession, token: str) -> dict[str, Any]:
        """The claims of an unexpired access token this identity provider signed, checked for
        its signature and times only, not against the database's current state: token
        revocation finds the grant by them. Anything else raises ``Unauthorized``."""
        key = await self._own_key(session, token)
        if key is None:
            raise Unauthorized("not signed by this identity provider")
        claims = self._decode(token, key)
        self._check_times(claims, self._clock.timestamp())
        if claims.get("token_use") != "access":
            raise Unauthorized("not an access token")
        return claims

    async def _jwt(self, session: AsyncSession, token: str, now: float, host: str) -> _Verified:
        key = await self._own_key(session, token)
        if key is None:
            expires, caller, trust = await self._external_caller(session, token, now, host)
            caller = dataclasses.replace(caller, expires=expires)
            return _Verified(expires, caller, None, trust)
        return (await self._own_token(session, token, key, now))[0]

    async def _own_key(self, session: AsyncSession, token: str) -> RSAKey | None:
        """The key of ours that signed ``token`` by its ``kid``, if any (the keyring reloaded
        once for a ``kid`` it does not know, decision 0004)."""
        try:
            header = extract_compact(token.encode()).headers()
        except (JoseError, ValueError, UnicodeError) as exc:
            raise Unauthorized("malformed bearer token") from exc
        kid = str(header.get("kid", ""))
        if self._keyring.public_key(kid) is None and self._keyring.may_reload_for_unknown_kid():
            await self._keyring.load(session)
        return self._keyring.public_key(kid)

    async def _own_token(
        self, session: AsyncSession, token: str, key: RSAKey, now: float
    ) -> tuple[_Verified, dict[str, Any]]:
        """Our own token signed with ``key``, checked but for the database's current state."""
        claims = self._decode(token, key)
        expires = self._check_times(claims, now)
        caller = dataclasses.replace(await self._local_caller(session, claims), expires=expires)
        grant = claims.get("grant_id")
        grant = grant if isinstance(grant, str) and grant else None
        verified = _Verified(expires, caller, _audiences(claims.get("aud")), grant=grant)
        return verified, claims

    def _decode(self, token: str, key: Any) -> dict[str, Any]:
        try:
            return dict(jwt.decode(token, key, algorithms=["RS256", "ES256"]).claims)
        except (JoseError, ValueError) as exc:
            raise Unauthorized("invalid bearer token") from exc

    @staticmethod
    def _check_times(claims: dict[str, Any], now: float) -> float:
        exp = claims.get("exp")
        if not isinstance(exp, int | float) or exp <= now:
            raise Unauthorized("the bearer token has expired")
        nbf = claims.get("nbf")
        if isinstance(nbf, int | float) and nbf > now + 60:
            raise Unauthorized("the bearer token is not valid yet")
        return float(exp)

    async def _local_caller(self, session: AsyncSession, claims: dict[str, Any]) -> Caller:
        if claims.get("token_use") != "access":
            raise Unauthorized("not an access token")
        tenant = await tenants_repo.get_by_name(session, str(claims.get("tenant", "")))
        issuer_host = urlsplit(str(claims.get("iss", ""))).netloc
        issued_by = await tenants.resolve_host(session, issuer_host) if issuer_host else None
        if tenant is None or issued_by is None or issued_by.id != tenant.id:
            raise Unauthorized("the token's issuer does not match its tenant")
        role = _role_from(claims.get("role"))
        if role is None:
            raise Unauthorized("the token carries no known role")
        subject = str(claims.get("sub", ""))
        if not (subject.isdigit() and len(subject) <= 18):
            raise Unauthorized("the token's subject is no user of this identity provider")
        return Caller(
            tenant_id=tenant.id,
            tenant_name=tenant.name,
            subject=subject,
            username=str(claims.get("preferred_username", claims.get("sub", ""))),
            role=role,
            method="oidc",
            primary=await self._is_primary(session, tenant.id),
            scopes=frozenset(str(claims.get("scope", "")).split()),
        )

    async def _external_caller(
        self, session: AsyncSession, token: str, now: float, host: str
    ) -> tuple[float, Caller, ExternalIssuer]:
        """A token of the external issuer that the tenant serving ``host`` trusts: only that
        tenant's trust settings apply, whichever other tenants trust the same issuer."""
        tenant, external, claims = await self._external.verify(session, token, host)
        expires = self._check_times(claims, now)
        if external.tenant_claim and claims.get(external.tenant_claim) != tenant.name:
            raise Unauthorized("the token belongs to another tenant")
        role = _role_from(claims.get(external.role_claim))
        if role is None:
            raise Unauthorized("the token carries no known role")
        caller = Caller(
            tenant_id=tenant.id,
            tenant_name=tenant.name,
            subject=str(claims.get("sub", "")),
            username=str(claims.get("preferred_username", claims.get("sub", ""))),
            role=role,
            method="external",
            primary=await self._is_primary(session, tenant.id),
        )
        return expires, caller, external
