"""Sockets of this host that listen inside the relayed-media range.

The packet filter keeps coturn from reaching its own host on ports outside that range
(``firewall.py``); a port inside it is one coturn may relay from, so the table leaves it open,
and any other service listening there is reachable by every peer through the relay.
``relay serve`` names such sockets in a warning before coturn starts. Read from the kernel's
socket tables (``/proc/net``): TCP sockets in the listening state and unconnected UDP sockets,
bound to any address but loopback.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

PROC_NET = Path("/proc/net")
# (file, protocol, state): TCP_LISTEN is 0A; an unconnected UDP socket is in state 07.
TABLES = (
    ("tcp", "TCP", "0A"),
    ("tcp6", "TCP", "0A"),
    ("udp", "UDP", "07"),
    ("udp6", "UDP", "07"),
)


def listening_in(low: int, high: int) -> list[str]:
    """Each socket listening on a port from ``low`` to ``high`` on a non-loopback address, as
    ``"UDP 0.0.0.0:50000"``, in the order the kernel lists them, without repeats."""
    found: list[str] = []
    for name, protocol, listening in TABLES:
        try:
            lines = (PROC_NET / name).read_text().splitlines()[1:]
        except OSError:  # no IPv6 on this host
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != listening:
                continue
            address, port = _endpoint(fields[1])
            if low <= port <= high and not address.is_loopback:
                shown = f"[{address}]" if address.version == 6 else str(address)
                entry = f"{protocol} {shown}:{port}"
                if entry not in found:
                    found.append(entry)
    return found


def _endpoint(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """``/proc/net``'s ``0100007F:1F90``: the address as the kernel stores it (32-bit words in
    host order, little-endian here), then the port in hexadecimal."""
    raw, port = text.split(":")
    packed = b"".join(bytes.fromhex(raw[i : i + 8])[::-1] for i in range(0, len(raw), 8))
    address = ipaddress.ip_address(packed)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address, int(port, 16)
