"""Where the server may send a request of its own: the SSRF guard (decision 0205).

Only http and https URLs whose host resolves exclusively to public unicast addresses are
accepted. Loopback, private, link-local (including the 169.254.169.254 metadata address),
shared 100.64.0.0/10, unspecified, multicast and reserved ranges are refused, also when
hidden in IPv4-mapped, 6to4, Teredo or NAT64 IPv6 forms. Each use opens CIDR ranges by a
setting of its own: ``SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE`` for webhook receivers,
``SWITCHBOARD_FEDERATION_ALLOW_PRIVATE`` for federation's providers
(``identity/federation/broker.py``), ``SWITCHBOARD_ISSUER_ALLOW_PRIVATE`` for the documents of
external issuers (``guarded_get``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_URL_LENGTH = 2048
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class RefusedDestination(OSError):
    """The URL or one of the addresses it resolves to is not an allowed destination."""


def parse_networks(cidrs: Iterable[str]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _is_public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return _is_public(embedded)
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return False
    return address.is_global and not (
        address.is_multicast
        or address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_reserved
        or address.is_unspecified
    )


def address_allowed(address: IPAddress, allow: Sequence[IPNetwork] = ()) -> bool:
    """True for a public unicast address, or one inside an operator-opened range."""
    candidates: list[IPAddress] = [address]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        candidates.append(address.ipv4_mapped)
    for candidate in candidates:
        if any(candidate.version == net.version and candidate in net for net in allow):
            return True
    return _is_public(address)


def check_url_shape(url: str) -> tuple[str, int]:
    """Scheme, host and length rules; returns ``(host, port)``. Raises RefusedDestination."""
    if len(url) > MAX_URL_LENGTH:
        raise RefusedDestination(f"the URL is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RefusedDestination(f"the URL is malformed: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise RefusedDestination("only http and https URLs are accepted")
    if not parts.hostname:
        raise RefusedDestination("the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise RefusedDestination("credentials in the URL are not accepted")
    if any(ch.isspace() for ch in url):
        raise RefusedDestination("the URL contains whitespace")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def literal_address(host: str) -> IPAddress | None:
    """The address a host names literally (``[::1]`` and ``fe80::1%eth0`` forms too), or None."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _refuse_unless_allowed(host: str, addresses: Iterable[str], allow: Sequence[IPNetwork]) -> None:
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        if not address_allowed(address, allow):
            raise RefusedDestination(f"{host} resolves to {address}, which is not a public address")


async def check_url(url: str, allow: Sequence[IPNetwork]) -> None:
    """Validate ``url`` and every address its host resolves to now. Raises RefusedDestination."""
    host, port = check_url_shape(url)
    literal = literal_address(host)
    if literal is not None:
        _refuse_unless_allowed(host, [str(literal)], allow)
        return
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise RefusedDestination(f"{host} does not resolve") from None
    if not infos:
        raise RefusedDestination(f"{host} does not resolve")
    _refuse_unless_allowed(host, [str(info[4][0]) for info in infos], allow)


def check_literal_host(url: str, allow: Sequence[IPNetwork]) -> None:
    """The delivery-time check of URLs naming an IP (the resolver sees only host names)."""
    host, _ = check_url_shape(url)
    literal = literal_address(host)
    if literal is not None:
        _refuse_unless_allowed(host, [str(literal)], allow)


class GuardedResolver(AbstractResolver):
    """Resolves like aiohttp's default resolver, then refuses non-public answers.

    The check runs on the very addresses the connection will use, so a DNS answer that
    changes between validation and connection (rebinding) cannot reach an internal host.
    """

    def __init__(self, allow: Sequence[IPNetwork]) -> None:
        self._inner = ThreadedResolver()
        self._allow = tuple(allow)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        _refuse_unless_allowed(host, [r["host"] for r in results], self._allow)
        return results

    async def close(self) -> None:
        await self._inner.close()


async def guarded_get(
    url: str, *, allow: Sequence[IPNetwork], seconds: float, max_bytes: int, accept: str
) -> bytes:
    """GET a document through the guard within ``seconds``: no redirect followed, no proxy,
    no cookies.

    Raises RefusedDestination (an OSError) for a URL or address the guard refuses, aiohttp's
    errors (a refusal at resolution time among them) or TimeoutError for a failed exchange, and
    ValueError for a status other than 200 or a body over ``max_bytes``."""
    check_literal_host(url, allow)
    resolver = GuardedResolver(allow)
    try:
        async with (
            aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False),
                timeout=aiohttp.ClientTimeout(total=seconds),
                cookie_jar=aiohttp.DummyCookieJar(),
            ) as http,
            http.get(url, allow_redirects=False, headers={"Accept": accept}) as response,
        ):
            if response.status != 200:
                raise ValueError(f"status {response.status}")
            body = bytearray()
            async for chunk in response.content.iter_chunked(64 * 1024):
                body += chunk
                if len(body) > max_bytes:
                    raise ValueError(f"more than {max_bytes} bytes")
    finally:
        await resolver.close()
    return bytes(body)
