"""The packet filter in front of coturn's UDP and TCP TURN port: one nftables table.

Kernel-side, so coturn keeps seeing the real client address and dropped packets cost no
userspace work (docs/decisions/0701-relay-packet-filter.md). The order of the chain is the
precedence of spec 8.2.5: exempt addresses accept, then the ACL drops, then the per-IP rate of
unauthenticated STUN Binding requests and the per-IP quota of concurrent flows drop. An exempt
address skips the rules only from the interface that routes back to it: anyone can write a
private source address in a datagram (decision 0706); the ACL sets never hold exempt addresses.
The rate comes before the quota: the kernel's flow count (``ct count``) also counts a flow whose
packet a later rule drops, so a rate-limited Binding checked by the quota first would crowd the
client's quota and be counted as over it. On the way out, it keeps coturn from relaying to this
host's own addresses (decision 0704). The TLS auto-blacklist has no place here: it lives at the
guard's TLS accept layer. The table also keeps coturn's PROXY-protocol port closed to everything
but loopback, since a PROXY header names the client's address and must only come from the
guard.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging

from switchboard.relay.acl import Acl
from switchboard.relay.addresses import EXEMPT_NETWORKS, IPV6_CLIENT_PREFIX
from switchboard.relay.settings import RelaySettings

log = logging.getLogger("switchboard.relay.firewall")

# A STUN Binding request: message type 0x0001 in the first two bytes of the UDP payload (the
# UDP header is 8 bytes, hence bit offset 64 from the transport header).
STUN_BINDING = "@th,64,16 0x0001"
# An IPv6 client is counted by its /64 (decision 0705).
V6_CLIENT = f"ip6 saddr & {ipaddress.IPv6Network(('::', IPV6_CLIENT_PREFIX)).netmask}"
COUNTERS = ("acl_udp", "acl_tcp", "over_quota", "binding_rate", "proxy_outside", "to_self")


class FirewallError(RuntimeError):
    """nft refused a ruleset."""


def _elements(networks: object) -> str:
    items = ", ".join(str(n) for n in networks)  # type: ignore[attr-defined]
    return f" elements = {{ {items} }};" if items else ""


def _output_chain(settings: RelaySettings, coturn_gid: int | None) -> str:
    """coturn's relayed traffic to this host's own addresses (decision 0704): dropped unless it
    goes from one relay port to another (two peers relayed by this relay). The group tells
    coturn's sockets from every other process's; the source port range leaves coturn's answers
    from its listening ports alone."""
    if coturn_gid is None:
        return ""
    relay = f"{settings.min_relay_port}-{settings.max_relay_port}"
    return f"""
  chain output {{
    type filter hook output priority filter - 5; policy accept;
    meta skgid {coturn_gid} meta l4proto {{ tcp, udp }} th sport {relay} th dport != {relay} fib daddr type local counter name to_self drop
  }}"""  # noqa: E501


def render_table(settings: RelaySettings, coturn_gid: int | None = None) -> str:
    name = settings.nft_table
    exempt4 = [n for n in EXEMPT_NETWORKS if n.version == 4]
    exempt6 = [n for n in EXEMPT_NETWORKS if n.version == 6]
    quota = settings.per_ip_allocations
    rate = f"{settings.binding_rate_per_second}/second burst {settings.binding_burst} packets"
    counters = "\n".join(f"  counter {c} {{}}" for c in COUNTERS)
    return f"""table inet {name} {{}}
delete table inet {name}
table inet {name} {{
  set exempt4 {{ type ipv4_addr; flags interval;{_elements(exempt4)} }}
  set exempt6 {{ type ipv6_addr; flags interval;{_elements(exempt6)} }}
  set acl4 {{ type ipv4_addr; flags interval; }}
  set acl6 {{ type ipv6_addr; flags interval; }}
  set quota4 {{ type ipv4_addr; flags dynamic; size 65535; }}
  set quota6 {{ type ipv6_addr; flags dynamic; size 65535; }}
  set bind4 {{ type ipv4_addr; flags dynamic,timeout; timeout 60s; size 65535; }}
  set bind6 {{ type ipv6_addr; flags dynamic,timeout; timeout 60s; size 65535; }}
{counters}
  chain input {{
    type filter hook input priority filter - 5; policy accept;
    tcp dport {settings.proxy_port} iif != "lo" counter name proxy_outside drop
    meta l4proto {{ tcp, udp }} th dport {settings.turn_port} jump turn
  }}
  chain turn {{
    ip saddr @exempt4 fib saddr . iif oif exists accept
    ip6 saddr @exempt6 fib saddr . iif oif exists accept
    meta l4proto udp ip saddr @acl4 counter name acl_udp drop
    meta l4proto udp ip6 saddr @acl6 counter name acl_udp drop
    meta l4proto tcp ip saddr @acl4 counter name acl_tcp drop
    meta l4proto tcp ip6 saddr @acl6 counter name acl_tcp drop
    meta l4proto udp {STUN_BINDING} add @bind4 {{ ip saddr limit rate over {rate} }} counter name binding_rate drop
    meta l4proto udp {STUN_BINDING} add @bind6 {{ {V6_CLIENT} limit rate over {rate} }} counter name binding_rate drop
    ct state new add @quota4 {{ ip saddr ct count over {quota} }} counter name over_quota drop
    ct state new add @quota6 {{ {V6_CLIENT} ct count over {quota} }} counter name over_quota drop
  }}{_output_chain(settings, coturn_gid)}
}}
"""  # noqa: E501


def render_acl(settings: RelaySettings, acl: Acl) -> str:
    """One atomic transaction that swaps the ACL sets' contents."""
    name = settings.nft_table
    lines = [f"flush set inet {name} acl4", f"flush set inet {name} acl6"]
    for set_name, networks in (("acl4", acl.v4), ("acl6", acl.v6)):
        if networks:
            items = ", ".join(str(n) for n in networks)
            lines.append(f"add element inet {name} {set_name} {{ {items} }}")
    return "\n".join(lines) + "\n"


async def _nft(*args: str, script: str | None = None) -> str:
    process = await asyncio.create_subprocess_exec(
        "nft", *args,
        stdin=asyncio.subprocess.PIPE if script is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate(script.encode() if script is not None else None)
    if process.returncode != 0:
        raise FirewallError(f"nft {' '.join(args)}: {err.decode().strip()}")
    return out.decode()


class Firewall:
    """The nftables table of one relay; installed at start, removed at stop."""

    def __init__(self, settings: RelaySettings, *, coturn_gid: int | None = None) -> None:
        self.settings = settings
        self.coturn_gid = coturn_gid
        self.acl: Acl | None = None

    async def install(self) -> None:
        await _nft("-f", "-", script=render_table(self.settings, self.coturn_gid))
        self.acl = None

    async def apply(self, acl: Acl) -> None:
        if acl == self.acl:
            return
        await _nft("-f", "-", script=render_acl(self.settings, acl))
        self.acl = acl
        log.info("packet filter: ACL now %d IPv4 and %d IPv6 networks", len(acl.v4), len(acl.v6))

    async def counters(self) -> dict[str, int]:
        """Packets dropped per counter of the table."""
        out = await _nft("-j", "list", "counters", "table", "inet", self.settings.nft_table)
        found = dict.fromkeys(COUNTERS, 0)
        for item in json.loads(out).get("nftables", []):
            counter = item.get("counter")
            if counter and counter.get("name") in found:
                found[counter["name"]] = int(counter.get("packets", 0))
        return found

    async def remove(self) -> None:
        try:
            await _nft("delete", "table", "inet", self.settings.nft_table)
        except FirewallError as exc:
            log.warning("%s", exc)
