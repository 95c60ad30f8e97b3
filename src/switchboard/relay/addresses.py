"""Which client addresses the relay rules never touch.

Spec 8.2.3 keeps private, loopback and link-local addresses always allowed. Python's
``ipaddress.is_private`` is wider than that (it also covers the documentation, benchmarking and
reserved ranges), so the exemption is this explicit list and nothing else.
"""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

EXEMPT_NETWORKS: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(cidr)
    for cidr in (
        "10.0.0.0/8",  # RFC 1918 private
        "172.16.0.0/12",  # RFC 1918 private
        "192.168.0.0/16",  # RFC 1918 private
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # IPv4 link-local
        "::1/128",  # IPv6 loopback
        "fc00::/7",  # IPv6 unique local (the IPv6 private range)
        "fe80::/10",  # IPv6 link-local
    )
)


def parse_address(text: str) -> IPAddress:
    """An address as the rules see it: IPv4-mapped IPv6 (``::ffff:a.b.c.d``) becomes IPv4, and
    an IPv6 zone (``fe80::1%eth0``) is dropped. Raises ValueError."""
    address = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


IPV6_CLIENT_PREFIX = 64


def client_of(address: IPAddress) -> IPNetwork:
    """Whom the per-client rules count (the TLS auto-blacklist, the per-IP quotas and the binding
    rate, decision 0705): an IPv4 address, or the /64 of an IPv6 address. A host or a site is
    given a whole /64 and sends from any address of it at will."""
    if isinstance(address, ipaddress.IPv6Address):
        return ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False)
    return ipaddress.IPv4Network(address)


def wholly_exempt(network: IPNetwork) -> bool:
    """True when every address of ``network`` is exempt: a rule on it could never drop."""
    return any(
        network.subnet_of(exempt)  # type: ignore[arg-type]
        for exempt in EXEMPT_NETWORKS
        if exempt.version == network.version
    )


def is_exempt(address: IPAddress) -> bool:
    """True for private (RFC 1918, IPv6 ULA), loopback and link-local addresses."""
    return any(
        address in network for network in EXEMPT_NETWORKS if network.version == address.version
    )
