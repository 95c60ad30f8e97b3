"""The operator ACL blacklist (spec 8.2.2): subjects, scopes and the match.

Only subjects ``ip`` and ``cidr`` and scopes ``sip-inbound``, ``pstn-outbound`` and ``any``
exist, and a rule of any of them drops the relay's traffic from its subject (decision 0703).
No match allows; exempt addresses (see addresses.py) are never dropped.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

from switchboard.relay.addresses import (
    EXEMPT_NETWORKS,
    IPAddress,
    IPNetwork,
    is_exempt,
    parse_address,
)

Subject = Literal["ip", "cidr"]
Scope = Literal["sip-inbound", "pstn-outbound", "any"]
SUBJECTS: tuple[str, ...] = get_args(Subject)
SCOPES: tuple[str, ...] = get_args(Scope)


@dataclass(frozen=True)
class Rule:
    subject: Subject
    value: str
    scope: Scope

    @property
    def network(self) -> IPNetwork:
        return ipaddress.ip_network(self.value)


def normalize(subject: str, value: str) -> str:
    """The canonical text of a rule's value; raises ValueError on a bad subject or value."""
    if subject == "ip":
        return str(parse_address(value.strip()))
    if subject == "cidr":
        try:
            return str(ipaddress.ip_network(value.strip()))
        except ValueError as exc:
            if "host bits" in str(exc):
                loose = ipaddress.ip_network(value.strip(), strict=False)
                raise ValueError(f"host bits set; did you mean {loose}?") from None
            raise
    raise ValueError(f"subject must be one of {', '.join(SUBJECTS)}")


def public_part(network: IPNetwork) -> list[IPNetwork]:
    """``network`` without the exempt ranges in it (two CIDR blocks nest or are disjoint)."""
    parts = [network]
    for exempt in EXEMPT_NETWORKS:
        if exempt.version != network.version:
            continue
        kept: list[IPNetwork] = []
        for part in parts:
            if part.subnet_of(exempt):  # type: ignore[arg-type]
                continue
            if exempt.subnet_of(part):  # type: ignore[arg-type]
                kept.extend(part.address_exclude(exempt))  # type: ignore[arg-type]
            else:
                kept.append(part)
        parts = kept
    return parts


class Acl:
    """An immutable snapshot of the rules, every scope of which applies to the accept paths.
    ``v4`` and ``v6`` are the networks the packet filter drops: the rules' public parts, since
    an exempt address is never dropped, whichever link it arrives on (decision 0706)."""

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        self.rules = tuple(rules)
        relay = [part for rule in self.rules for part in public_part(rule.network)]
        self.v4: tuple[IPNetwork, ...] = tuple(
            ipaddress.collapse_addresses(n for n in relay if isinstance(n, ipaddress.IPv4Network))
        )
        self.v6: tuple[IPNetwork, ...] = tuple(
            ipaddress.collapse_addresses(n for n in relay if isinstance(n, ipaddress.IPv6Network))
        )

    def blocks(self, address: IPAddress) -> bool:
        """True when a rule matches a non-exempt address."""
        if is_exempt(address):
            return False
        networks = self.v4 if address.version == 4 else self.v6
        return any(address in network for network in networks)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Acl) and set(self.rules) == set(other.rules)

    def __hash__(self) -> int:
        return hash(frozenset(self.rules))
