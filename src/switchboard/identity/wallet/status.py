"""Checking the ``status`` of a presented credential (Token Status List,
draft-ietf-oauth-status-list-21, section 8): the status list token its ``status_list.uri``
names is fetched over HTTP through the SSRF guard (decision 0028), at most once per ``ttl``
and never kept past its ``exp`` or :data:`MAX_CACHE_SECONDS`; its signature is checked with
the key that signed the credential, and the credential refused unless its entry is valid.
Anything that fails refuses the credential (fail closed): a list that cannot be fetched or
read, a wrong signature, another list's ``sub``. The tenant's own staff credentials are read
from its own lists in-process by the caller."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import JWKRegistry
from joserfc.jws import extract_compact

from switchboard.identity.issuance import status
from switchboard.identity.wallet.verify import Invalid, Trust
from switchboard.kit.destinations import IPNetwork, guarded_get

log = logging.getLogger("switchboard.identity")

MAX_CACHE_SECONDS = 300
MAX_CACHED_LISTS = 1000
# How long past its keeping a list fetched for an answer still serves that answer's check.
GRACE_SECONDS = 60
TIMEOUT_SECONDS = 5.0
MAX_TOKEN_BYTES = 1 << 20
ALGORITHMS = ["ES256", "ES384", "ES512", "EdDSA", "RS256", "PS256"]

Fetch = Callable[[str], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Reference:
    """A credential's entry in a status list (its ``status.status_list``)."""

    idx: int
    uri: str


def reference(claims: dict[str, Any]) -> Reference | None:
    """The status list entry of a credential's claims; ``None`` when it has no ``status``."""
    if "status" not in claims:
        return None
    entry = claims["status"].get("status_list") if isinstance(claims["status"], dict) else None
    if not isinstance(entry, dict):
        raise Invalid("the credential's status names no status list")
    idx, uri = entry.get("idx"), entry.get("uri")
    if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0 or not isinstance(uri, str):
        raise Invalid("the credential's status list entry is malformed")
    return Reference(idx=idx, uri=uri)


def http_fetch(allow: Sequence[IPNetwork]) -> Fetch:
    """GET a status list token through the SSRF guard: public addresses and the ranges of
    ``allow`` only, no redirects followed, at most ``MAX_TOKEN_BYTES``."""

    async def fetch(uri: str) -> str:
        body = await guarded_get(
            uri, allow=allow, seconds=TIMEOUT_SECONDS, max_bytes=MAX_TOKEN_BYTES,
            accept=status.MEDIA_TYPE,
        )  # fmt: skip
        return body.decode().strip()

    return fetch


def _expiry(token: str, now: int) -> int:
    """Until when a fetched token may be kept: its ``ttl``, bounded by its ``exp`` and ours."""
    try:
        claims = json.loads(extract_compact(token.encode()).payload)
    except (JoseError, ValueError, UnicodeError):
        return now
    until = now + MAX_CACHE_SECONDS
    ttl, exp = claims.get("ttl"), claims.get("exp")
    if isinstance(ttl, int) and ttl >= 0:
        until = min(until, now + ttl)
    if isinstance(exp, int):
        until = min(until, exp)
    return until


class StatusLists:
    """Status list tokens of external issuers by URI, kept for a bounded time (and at most
    :data:`MAX_CACHED_LISTS` of them, the oldest dropped first). ``fetch`` brings a list over
    the network and runs before the answer's transaction opens; the check inside it reads the
    kept list with ``token`` and never fetches (decision 0029)."""

    def __init__(self, *, allow: Sequence[IPNetwork] = (), fetch: Fetch | None = None) -> None:
        self._fetch = fetch or http_fetch(allow)
        self._cache: dict[str, tuple[int, str]] = {}

    async def fetch(self, uri: str, *, now: int) -> None:
        """Have the list at ``uri`` at hand: fetched unless kept. Never raises: ``token``
        refuses a list this could not bring."""
        hit = self._cache.get(uri)
        if (hit is not None and hit[0] > now) or urlsplit(uri).scheme not in ("https", "http"):
            return
        try:
            token = await self._fetch(uri)
        except (OSError, aiohttp.ClientError, TimeoutError, ValueError) as exc:
            # what the address answered stays in the log: the wallet's holder learns nothing
            log.warning("the status list at %s could not be fetched: %s: %s", uri,
                        type(exc).__name__, exc)  # fmt: skip
            self._cache.pop(uri, None)
            return
        self._cache.pop(uri, None)  # re-inserted last: the oldest entries go first
        if len(self._cache) >= MAX_CACHED_LISTS:
            self._cache.pop(next(iter(self._cache)))
        self._cache[uri] = (_expiry(token, now), token)

    def token(self, uri: str, *, now: int) -> str:
        """The list token at ``uri`` as kept (by a ``fetch`` moments ago), with no I/O."""
        if urlsplit(uri).scheme not in ("https", "http"):
            raise Invalid("the credential's status list is not at an http(s) URI")
        hit = self._cache.get(uri)
        if hit is None or hit[0] + GRACE_SECONDS <= now:
            raise Invalid("the credential's status list cannot be fetched")
        return hit[1]


def entry_status(token: str, ref: Reference, *, issuer: Trust, now: int) -> int:
    """The status of ``ref`` in a status list token signed by ``issuer``'s key."""
    try:
        key = JWKRegistry.import_key(issuer.jwk)
        decoded = jwt.decode(token, key, algorithms=ALGORITHMS)
    except (JoseError, ValueError):
        raise Invalid("the status list is not signed by the credential's issuer") from None
    if decoded.header.get("typ") != status.LIST_TYP:
        raise Invalid(f"the status list token is not typed {status.LIST_TYP}")
    claims = dict(decoded.claims)
    if claims.get("sub") != ref.uri:
        raise Invalid("the status list token is for another list")
    exp = claims.get("exp")
    if isinstance(exp, int) and exp <= now:
        raise Invalid("the status list token has expired")
    body = claims.get("status_list")
    if not isinstance(body, dict) or not isinstance(body.get("lst"), str):
        raise Invalid("the status list token holds no list")
    bits = body.get("bits")
    try:
        return status.status_at(body["lst"], ref.idx, bits=bits if isinstance(bits, int) else 0)
    except status.InvalidList as exc:
        raise Invalid(f"the status list cannot be read: {exc}") from None


def check_external(lists: StatusLists, ref: Reference, *, issuer: Trust, now: int) -> None:
    """Refuse a credential of an external issuer unless its entry is valid (in its list as
    kept: ``StatusLists.fetch`` brought it before)."""
    token = lists.token(ref.uri, now=now)
    if entry_status(token, ref, issuer=issuer, now=now) != status.VALID:
        raise Invalid("the credential has been revoked")
