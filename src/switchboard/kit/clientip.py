"""The client address of a request: the peer, or ``X-Forwarded-For`` only from trusted proxies."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(cidrs: Sequence[str]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def _trusted(address: str, networks: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_ip(peer: str | None, forwarded_for: str | None, trusted: Sequence[Network]) -> str:
    """The peer address, unless the peer is a trusted proxy: then the right-most address of
    ``X-Forwarded-For`` that is not itself a trusted proxy (entries further left are whatever the
    client claimed, so they are never believed)."""
    address = peer or ""
    if not forwarded_for or not _trusted(address, trusted):
        return address
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            return address  # a malformed chain: keep the proxy's own address
        address = hop
        if not _trusted(hop, trusted):
            break
    return address
