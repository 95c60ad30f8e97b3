"""Who may send the bridge SIP requests (``--sip-allow``, decision 0329).

Without the option anyone may, as before. With it, a request (an INVITE, an OPTIONS, a BYE)
from an address outside the listed networks is dropped unanswered, before it is parsed, and a
TCP connection from one is closed as it opens: a scanner learns nothing, and costs little. The
trunks' own addresses are always admitted (names are resolved once, at start). Responses are
not filtered: they reach only a transaction this bridge started, by its random branch, and a
carrier may answer from another address of its own.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass

from switchboard.mediabridge.config import Trunk

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class SourcesError(ValueError):
    """``--sip-allow`` or a trunk's address cannot be used; the message names it."""


@dataclass(frozen=True)
class Sources:
    networks: tuple[Network, ...]

    def admits(self, host: str) -> bool:
        """Whether a request from ``host`` (an address as the socket gives it) is taken."""
        try:
            address = ipaddress.ip_address(host.split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.networks)

    def __str__(self) -> str:
        return ", ".join(str(network) for network in self.networks)


def parse_networks(text: str) -> tuple[Network, ...]:
    """Comma-separated addresses and networks (``203.0.113.0/24``, ``2001:db8::1``); a network
    written with host bits set is refused, as it most likely names the wrong range."""
    networks = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=True))
        except ValueError:
            raise SourcesError(
                f"{item!r} is not an address or a network in CIDR form with its host bits zero"
            ) from None
    if not networks:
        raise SourcesError("no address or network given")
    return tuple(networks)


def trunk_networks(trunks: Iterable[Trunk]) -> tuple[Network, ...]:
    """Each trunk's address, a name resolved now to every address it has."""
    networks: list[Network] = []
    for trunk in trunks:
        try:
            networks.append(ipaddress.ip_network(trunk.host))
            continue
        except ValueError:
            pass
        try:
            found = socket.getaddrinfo(trunk.host, trunk.port, proto=socket.IPPROTO_UDP)
        except OSError as exc:
            raise SourcesError(f"trunks.{trunk.id}: cannot resolve {trunk.host} ({exc})") from None
        networks += [ipaddress.ip_network(str(info[4][0]).split("%", 1)[0]) for info in found]
    return tuple(networks)


def allowed(text: str, trunks: Iterable[Trunk]) -> Sources | None:
    """The sources ``--sip-allow`` admits with the trunks' (each network once), or None
    (anyone) without it."""
    if not text.strip():
        return None
    return Sources(tuple(dict.fromkeys(parse_networks(text) + trunk_networks(trunks))))
