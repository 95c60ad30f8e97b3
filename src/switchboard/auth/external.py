"""Access tokens of a tenant's trusted external OIDC issuer (the ``ExternalOidc:*`` settings).

The issuer's keys (the JWKS at ``ExternalOidc:JwksUrl``) come over HTTP through the SSRF guard
(decision 0028), and never while a database transaction is open (decision 0029):
``ExternalIssuers.prepare`` fetches them before the request's transaction begins, and checking a
token inside a transaction uses the keys at hand only. A URL is fetched at most once per
``REFETCH_EVERY`` seconds, a failure included, and by one request at a time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jws import extract_compact
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.kit.db import Database
from switchboard.kit.destinations import IPNetwork, guarded_get
from switchboard.kit.errors import Unauthorized
from switchboard.tenants import service as tenants
from switchboard.tenants.config import ExternalIssuer, TenantConfig
from switchboard.tenants.models import Tenant

log = logging.getLogger("switchboard.identity")

ALGORITHMS = ["RS256", "ES256"]
FETCH_TIMEOUT = 5.0
MAX_JWKS_BYTES = 512 * 1024
# At most one fetch of a JWKS URL in this many seconds: a key the kept set lacks (the issuer
# rotated, or the token is forged) or a failed fetch waits that long for the next one.
REFETCH_EVERY = 10.0
# How long past their TTL kept keys still serve a check whose fetch was due before it began.
GRACE_SECONDS = 60.0
UNAVAILABLE = "the external issuer's keys are unavailable"
UNTRUSTED = "the token was not issued by a trusted issuer"

Fetch = Callable[[str], Awaitable[bytes]]


def jwks_fetch(allow: Sequence[IPNetwork]) -> Fetch:
    """GET a JWKS document through the SSRF guard (decision 0028): public addresses and the
    ranges of ``allow`` only, no redirects followed, at most ``MAX_JWKS_BYTES``."""

    async def fetch(url: str) -> bytes:
        return await guarded_get(
            url, allow=allow, seconds=FETCH_TIMEOUT, max_bytes=MAX_JWKS_BYTES,
            accept="application/json",
        )  # fmt: skip

    return fetch


def _key_set(body: bytes) -> KeySet:
    document = orjson.loads(body)
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("not a JWK Set")
    return KeySet.import_key_set(document)  # type: ignore[arg-type]


def peek(token: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A compact JWT's header and claims, not verified; None when ``token`` is no JWT."""
    try:
        parts = extract_compact(token.encode())
        claims = orjson.loads(parts.payload)
    except (JoseError, ValueError, UnicodeError):
        return None
    return (parts.headers(), claims) if isinstance(claims, dict) else None


def _verified(token: str, keys: KeySet) -> dict[str, Any] | None:
    try:
        return dict(jwt.decode(token, keys, algorithms=ALGORITHMS).claims)
    except (JoseError, ValueError):
        return None


@dataclass(slots=True)
class _Jwks:
    keys: KeySet | None = None
    kids: frozenset[str] = frozenset()
    fetched: float = 0.0  # when ``keys`` were fetched (the clock's Unix time)
    attempted: float | None = None  # when the last fetch began


class ExternalKeys:
    """The JWKS of each issuer URL, kept ``ttl`` seconds. A fetch is due when none is kept, the
    kept one is past its TTL or lacks the token's ``kid``; it runs once per ``REFETCH_EVERY``
    seconds at most (a failure is remembered as long), and the requests that need it meanwhile
    wait for that one fetch."""

    def __init__(self, *, ttl: float, clock: Clock, fetch: Fetch) -> None:
        self._ttl = ttl
        self._clock = clock
        self._fetch = fetch
        self._sets: dict[str, _Jwks] = {}
        self._flights: dict[str, asyncio.Task[None]] = {}

    def _now(self) -> float:
        return self._clock.timestamp()

    def at_hand(self, url: str) -> KeySet | None:
        """The keys a check may use now, with no I/O."""
        kept = self._sets.get(url)
        if (
            kept is None
            or kept.keys is None
            or self._now() - kept.fetched > self._ttl + GRACE_SECONDS
        ):
            return None
        return kept.keys

    async def ensure(self, url: str, kid: str) -> None:
        """Fetch the JWKS at ``url`` if one is due for a token naming ``kid`` and allowed.
        Never raises: the check that follows refuses a token whose keys are not at hand."""
        kept = self._sets.setdefault(url, _Jwks())
        fresh = kept.keys is not None and self._now() - kept.fetched < self._ttl
        if fresh and (not kid or kid in kept.kids):
            return
        flight = self._flights.get(url)
        if flight is None:
            if kept.attempted is not None and self._now() - kept.attempted < REFETCH_EVERY:
                return
            kept.attempted = self._now()
            flight = asyncio.create_task(self._refresh(url, kept))
            self._flights[url] = flight
            flight.add_done_callback(lambda done: self._landed(url, done))
        await asyncio.shield(flight)  # a request that goes away leaves the fetch to the others

    def _landed(self, url: str, done: asyncio.Task[None]) -> None:
        if self._flights.get(url) is done:
            del self._flights[url]

    async def _refresh(self, url: str, kept: _Jwks) -> None:
        try:
            keys = _key_set(await self._fetch(url))
        except (OSError, aiohttp.ClientError, TimeoutError, ValueError) as exc:
            log.warning("the JWKS at %s could not be fetched: %s: %s", url, type(exc).__name__, exc)
            self._failed(kept)
            return
        except Exception:  # a foreign document can fail the JWK parser in many ways
            log.warning("the JWKS at %s could not be read", url, exc_info=True)
            self._failed(kept)
            return
        kept.keys, kept.fetched = keys, self._now()
        kept.kids = frozenset(str(key.kid) for key in keys if key.kid)

    def _failed(self, kept: _Jwks) -> None:
        if kept.keys is not None and self._now() - kept.fetched >= self._ttl:
            kept.keys = None  # past its TTL and not confirmed by the issuer: no longer trusted


async def host_trust(
    session: AsyncSession, host: str
) -> tuple[Tenant | None, ExternalIssuer | None]:
    """The tenant serving ``host`` and the external issuer it trusts (either may be None)."""
    tenant = await tenants.resolve_host(session, host) if host else None
    if tenant is None:
        return None, None
    return tenant, TenantConfig.from_settings(tenant.settings).external_issuer


class ExternalIssuers:
    """Tokens of the issuer that the tenant serving the request's Host trusts."""

    def __init__(self, *, db: Database, keys: ExternalKeys) -> None:
        self._db = db
        self._keys = keys

    async def prepare(self, host: str, issuer: str, kid: str) -> None:
        """Before any transaction: when the Host's tenant trusts ``issuer``, have its keys at
        hand for a token naming ``kid`` (one short read, then a fetch if one is due)."""
        async with self._db.transaction(read_only=True) as session:
            _, trust = await host_trust(session, host)
        if trust is not None and trust.issuer == issuer and trust.jwks_url:
            await self._keys.ensure(trust.jwks_url, kid)

    async def verify(
        self, session: AsyncSession, token: str, host: str
    ) -> tuple[Tenant, ExternalIssuer, dict[str, Any]]:
        """The Host's tenant, the trust it places in the token's issuer, and the token's claims
        with their signature checked against the keys at hand. Raises Unauthorized."""
        peeked = peek(token)
        if peeked is None:
            raise Unauthorized("malformed bearer token")
        tenant, trust = await host_trust(session, host)
        if tenant is None or trust is None or trust.issuer != peeked[1].get("iss"):
            raise Unauthorized(UNTRUSTED)
        keys = self._keys.at_hand(trust.jwks_url)
        if keys is None:
            raise Unauthorized(UNAVAILABLE)
        claims = _verified(token, keys)
        if claims is None:
            raise Unauthorized("invalid bearer token")
        return tenant, trust, claims
