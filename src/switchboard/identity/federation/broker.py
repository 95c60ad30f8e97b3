"""Talking to an external provider over HTTP: discovery, the code exchange (authlib's OAuth 2.0
client, PKCE S256) and the ID token's verification against the provider's JWKS (joserfc). The
discovery document and the JWKS are kept per issuer for a bounded time (:class:`ProviderCache`);
an ID token signed with a key the kept JWKS lacks fetches it again (key rotation). A failed
discovery is kept too, for :data:`FAILURE_SECONDS`.

Every request goes through the SSRF guard of webhooks (decision 0205, here 0025): the addresses
a provider's host resolves to are checked as the connection is made, and only public unicast
ones (or those in ``SWITCHBOARD_FEDERATION_ALLOW_PRIVATE``) are connected to. Redirects are not
followed and no proxy from the environment is used (it would be the one connected to)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpcore2
import httpx2
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jws import extract_compact

from switchboard.kit.destinations import (
    IPNetwork,
    RefusedDestination,
    address_allowed,
    check_url_shape,
)

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


class RefusedAddress(httpcore2.ConnectError):
    """A provider's host is, or resolves to, an address outside the allowed ones."""


class _GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Connects only to checked addresses: the host is resolved here, every address it resolves
    to must be allowed (one that is not refuses the host), and the socket connects to those
    very addresses, so a DNS answer that changes between checks (rebinding) cannot reach
    inside. TLS still names the host (httpcore sends the origin's name as SNI)."""

    def __init__(self, allow: Sequence[IPNetwork]) -> None:
        self._inner = httpcore2.AnyIOBackend()
        self._allow = tuple(allow)

    async def _addresses(self, host: str, port: int, seconds: float | None) -> list[str]:
        try:
            return [str(ipaddress.ip_address(host))]
        except ValueError:
            pass
        loop = asyncio.get_running_loop()
        try:
            infos = await asyncio.wait_for(
                loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), seconds
            )
        except (OSError, TimeoutError):
            raise httpcore2.ConnectError(f"{host} does not resolve") from None
        return list(dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in infos))

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await self._addresses(host, port, timeout)
        if not addresses:
            raise httpcore2.ConnectError(f"{host} does not resolve")
        for text in addresses:
            if not address_allowed(ipaddress.ip_address(text), self._allow):
                raise RefusedAddress(f"{host} resolves to {text}, which is not a public address")
        failure: httpcore2.ConnectError | httpcore2.ConnectTimeout | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address,
                    socket_options=socket_options,
                )  # fmt: skip
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise RefusedAddress("a provider is never reached through a local socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _GuardedTransport(httpx2.AsyncHTTPTransport):
    """httpx's transport on a connection pool whose connections :class:`_GuardedBackend` makes.
    httpx takes no network backend of one's choosing, so the pool its ``__init__`` would build
    (and nothing else) is built here instead."""

    def __init__(self, allow: Sequence[IPNetwork]) -> None:
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(),
            network_backend=_GuardedBackend(allow),
        )


def _why(exc: BaseException) -> str:
    """What failed, for the page: the guard's refusal in its own words, else the error's kind."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, RefusedAddress | RefusedDestination):
            return f"refused: {cause}"
        cause = cause.__cause__ or cause.__context__
    return type(exc).__name__


def _check_url(url: str, what: str) -> None:
    try:
        check_url_shape(url)
    except RefusedDestination as exc:
        raise BrokerError(f"the provider's {what} is refused: {exc}") from None


def client(
    *,
    client_id: str,
    secret: str | None,
    redirect_uri: str,
    scope: str,
    allow: Sequence[IPNetwork] = (),
) -> AsyncOAuth2Client:
    """An OAuth 2.0 client whose every connection goes through the SSRF guard."""
    return AsyncOAuth2Client(
        client_id=client_id,
        client_secret=secret,
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
        redirect_uri=redirect_uri,
        scope=scope,
        code_challenge_method="S256",
        timeout=TIMEOUT_SECONDS,
        transport=_GuardedTransport(allow),
        trust_env=False,
        follow_redirects=False,
    )


async def fetch_json(oauth: AsyncOAuth2Client, url: str) -> dict[str, Any]:
    _check_url(url, "URL")
    try:
        response = await oauth.request(
            "GET", url, headers={"Accept": "application/json"}, withhold_token=True
        )
        response.raise_for_status()
        body = response.json()
    except (httpx2.HTTPError, ValueError) as exc:
        raise BrokerError(f"the provider did not answer {url}: {_why(exc)}") from None
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
    document; ``allow`` are the private ranges the guard lets the clients of :meth:`client`
    connect to."""

    def __init__(
        self, *, ttl: int = CACHE_SECONDS, fetch: Fetch | None = None,
        allow: Sequence[IPNetwork] = (),
    ) -> None:  # fmt: skip
        self.ttl = ttl
        self.allow = tuple(allow)
        self._fetch: Fetch = fetch or fetch_json
        self._kept: dict[str, _Kept] = {}
        self._failed: dict[str, tuple[int, str]] = {}

    def client(
        self, *, client_id: str, secret: str | None, redirect_uri: str, scope: str
    ) -> AsyncOAuth2Client:
        return client(
            client_id=client_id, secret=secret, redirect_uri=redirect_uri, scope=scope,
            allow=self.allow,
        )  # fmt: skip

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
    """The provider's metadata (OpenID Connect Discovery 1.0); its ``issuer`` must be ours, and
    an https issuer's token endpoint and JWKS must be https too (the secret is sent to one)."""
    url = f"{issuer.rstrip('/')}/.well-known/openid-configuration"
    body = await (fetch or fetch_json)(oauth, url)
    if body.get("issuer") != issuer:
        raise BrokerError("the provider's discovery names another issuer")
    try:
        metadata = ProviderMetadata(
            issuer=issuer,
            authorization_endpoint=str(body["authorization_endpoint"]),
            token_endpoint=str(body["token_endpoint"]),
            jwks_uri=str(body["jwks_uri"]),
        )
    except KeyError as exc:
        raise BrokerError(f"the provider's discovery lacks {exc.args[0]}") from None
    for what in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        url = getattr(metadata, what)
        _check_url(url, what)
        if issuer.startswith("https:") and not url.startswith("https:"):
            raise BrokerError(f"the provider's {what} is not https")
    return metadata


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
        raise BrokerError(f"the provider refused the code: {_why(exc)}") from None
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
