"""Talking to an external provider over HTTP: discovery, the code exchange (authlib's OAuth 2.0
client, PKCE S256) and the ID token's verification against the provider's JWKS (joserfc). The
discovery document and the JWKS are kept per issuer for a bounded time (:class:`ProviderCache`);
an ID token signed with a key the kept JWKS lacks fetches it again (key rotation). A failed
discovery is kept too, for :data:`FAILURE_SECONDS`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jws import extract_compact

TIMEOUT_SECONDS = 10.0
LEEWAY_SECONDS = 60
CACHE_SECONDS = 3600  # how long a provider's discovery document and JWKS are kept
FAILURE_SECONDS = 30  # how long a failed discovery is answered without asking again
REFETCH_GAP_SECONDS = 10  # an unknown kid fetches the JWKS again at most this often
ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256", "EdDSA"]


class BrokerError(Exception):
    """The provider could not be reached, or answered something this side cannot accept."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


@dataclass(frozen=True, slots=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str


def client(
    *, client_id: str, secret: str | None, redirect_uri: str, scope: str
) -> AsyncOAuth2Client:
    return AsyncOAuth2Client(
        client_id=client_id,
        client_secret=secret,
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
        redirect_uri=redirect_uri,
        scope=scope,
        code_challenge_method="S256",
        timeout=TIMEOUT_SECONDS,
    )


async def fetch_json(oauth: AsyncOAuth2Client, url: str) -> dict[str, Any]:
    try:
        response = await oauth.request(
            "GET", url, headers={"Accept": "application/json"}, withhold_token=True
        )
        response.raise_for_status()
        body = response.json()
    except (httpx2.HTTPError, ValueError) as exc:
        raise BrokerError(f"the provider did not answer {url}: {type(exc).__name__}") from None
    if not isinstance(body, dict):
        raise BrokerError(f"the provider's {url} is not a JSON object")
    return body


Fetch = Callable[[AsyncOAuth2Client, str], Awaitable[dict[str, Any]]]


@dataclass(slots=True)
class _Kept:
    fetched_at: int
    metadata: ProviderMetadata | None = None
    keys: KeySet | None = None
    keys_fetched_at: int = 0
    kids: set[str] = field(default_factory=set)


class ProviderCache:
    """Providers' discovery documents and JWKS by issuer, each kept ``ttl`` seconds (of the
    runtime's clock); the JWKS is fetched again before that when an ID token names a ``kid`` it
    lacks, at most once every :data:`REFETCH_GAP_SECONDS`. A failed discovery is answered
    again for :data:`FAILURE_SECONDS` without asking the provider. ``fetch`` reads one JSON
    document."""

    def __init__(self, *, ttl: int = CACHE_SECONDS, fetch: Fetch | None = None) -> None:
        self.ttl = ttl
        self._fetch: Fetch = fetch or fetch_json
        self._kept: dict[str, _Kept] = {}
        self._failed: dict[str, tuple[int, str]] = {}

    def _entry(self, issuer: str, now: int) -> _Kept:
        kept = self._kept.get(issuer)
        if kept is None or now - kept.fetched_at >= self.ttl:
            kept = self._kept[issuer] = _Kept(fetched_at=now)
        return kept

    async def metadata(
        self, oauth: AsyncOAuth2Client, issuer: str, *, now: int
    ) -> ProviderMetadata:
        failed = self._failed.get(issuer)
        if failed is not None and now - failed[0] < FAILURE_SECONDS:
            raise BrokerError(failed[1])
        kept = self._entry(issuer, now)
        if kept.metadata is None:
            try:
                kept.metadata = await discover(oauth, issuer, fetch=self._fetch)
            except BrokerError as exc:
                self._failed[issuer] = (now, exc.description)
                raise
            self._failed.pop(issuer, None)
        return kept.metadata

    async def keys(
        self, oauth: AsyncOAuth2Client, metadata: ProviderMetadata, *, kid: str | None, now: int
    ) -> KeySet:
        kept = self._entry(metadata.issuer, now)
        unknown = kid is not None and kid not in kept.kids
        may_refetch = now - kept.keys_fetched_at >= REFETCH_GAP_SECONDS
        if kept.keys is None or (unknown and may_refetch):
            document = await self._fetch(oauth, metadata.jwks_uri)
            try:
                kept.keys = KeySet.import_key_set(document)  # type: ignore[arg-type]
            except (JoseError, ValueError, KeyError, TypeError):
                raise BrokerError("the provider's JWKS cannot be read") from None
            kept.keys_fetched_at = now
            kept.kids = {str(key.kid) for key in kept.keys.keys if key.kid}
        return kept.keys


async def discover(
    oauth: AsyncOAuth2Client, issuer: str, *, fetch: Fetch | None = None
) -> ProviderMetadata:
    """The provider's metadata (OpenID Connect Discovery 1.0); its ``issuer`` must be ours."""
    url = f"{issuer.rstrip('/')}/.well-known/openid-configuration"
    body = await (fetch or fetch_json)(oauth, url)
    if body.get("issuer") != issuer:
        raise BrokerError("the provider's discovery names another issuer")
    try:
        return ProviderMetadata(
            issuer=issuer,
            authorization_endpoint=str(body["authorization_endpoint"]),
            token_endpoint=str(body["token_endpoint"]),
            jwks_uri=str(body["jwks_uri"]),
        )
    except KeyError as exc:
        raise BrokerError(f"the provider's discovery lacks {exc.args[0]}") from None


async def exchange_code(
    oauth: AsyncOAuth2Client, metadata: ProviderMetadata, *, code: str, verifier: str
) -> str:
    """Redeem the code (with the PKCE verifier); the ID token it returns."""
    try:
        token = await oauth.fetch_token(
            metadata.token_endpoint, grant_type="authorization_code", code=code,
            code_verifier=verifier,
        )  # fmt: skip
    except (AuthlibBaseError, httpx2.HTTPError, ValueError) as exc:
        raise BrokerError(f"the provider refused the code: {type(exc).__name__}") from None
    id_token = token.get("id_token")
    if not isinstance(id_token, str):
        raise BrokerError("the provider returned no ID token")
    return id_token


def _kid(id_token: str) -> str | None:
    try:
        kid = extract_compact(id_token.encode()).headers().get("kid")
    except (JoseError, ValueError, UnicodeError):
        raise BrokerError("the ID token cannot be read") from None
    return kid if isinstance(kid, str) else None


async def verify_id_token(
    oauth: AsyncOAuth2Client,
    metadata: ProviderMetadata,
    id_token: str,
    *,
    cache: ProviderCache,
    client_id: str,
    nonce: str,
    now: int,
) -> dict[str, Any]:
    """The claims of an ID token signed by a key of the provider's JWKS, issued by it for us,
    unexpired, carrying this sign-in's nonce (OpenID Connect Core 3.1.3.7)."""
    keys = await cache.keys(oauth, metadata, kid=_kid(id_token), now=now)
    try:
        token = jwt.decode(id_token, keys, algorithms=ALGORITHMS)
    except (JoseError, ValueError):
        raise BrokerError("the ID token's signature does not verify") from None
    claims = dict(token.claims)
    registry = jwt.JWTClaimsRegistry(
        now=now, leeway=LEEWAY_SECONDS,
        iss={"essential": True, "value": metadata.issuer},
        aud={"essential": True, "value": client_id},
        exp={"essential": True}, sub={"essential": True},
    )  # fmt: skip
    try:
        registry.validate(claims)
    except JoseError as exc:
        raise BrokerError(f"the ID token is not valid here ({exc.error})") from None
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise BrokerError("the ID token is meant for another party (azp)")
    if claims.get("nonce") != nonce:
        raise BrokerError("the ID token's nonce is not this sign-in's")
    return claims
