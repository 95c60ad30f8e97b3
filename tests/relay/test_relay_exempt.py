"""Who is exempt (spec 8.2.3): a private source address is never dropped by the ACL, and skips the
quotas and the binding rate only when it arrives from the link that routes back to it (decision
0706). On both database backends: the test lists an ACL rule."""

from __future__ import annotations

import random
import subprocess

import pytest

from switchboard.relay.server import RelayServer
from tests.relay.conftest import NetHost, acl

pytestmark = pytest.mark.slow


def _run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


async def test_a_private_source_is_exempt_only_from_the_link_that_routes_to_it(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    """Host a sends from two private addresses: one the relay routes back to a's link (a
    private client there), one it routes elsewhere (an address a has no claim to, as an
    attacker on the internet can put in a packet). The kernel's reverse-path filter is loose,
    as on Debian: any route, even the default one, lets such a packet in."""
    a, b = hosts
    turn = relay.settings.turn_port
    _run("sysctl", "-q", "-w", f"net.ipv4.conf.{a.link}.rp_filter=2")
    net = f"10.{random.randrange(256)}.{random.randrange(256)}"
    routed, spoofed = a.add_address(f"{net}.1/32"), a.add_address(f"{net}.2/32")
    _run("ip", "route", "add", f"{routed}/32", "via", a.address, "dev", a.link)
    _run("ip", "route", "add", f"{spoofed}/32", "via", b.address, "dev", b.link)
    # A rule that reaches into private space drops only its public part (11.0.0.0/8 here).
    await acl(relay, "add", "cidr", "10.0.0.0/7")
    await relay.tick()
    # A private client on its own link: no binding rate (a burst of 4, then 1/s, elsewhere).
    assert await a.run("stun-flows", a.gateway, turn, 1, 12, source=routed) == ["12"]
    assert (await relay.refresh_stats()).binding_rate_drops == 0
    # The spoofed one is judged as any public address: its Bindings beyond the burst are
    # dropped (the answers to the rest go where the relay routes that address, not to a).
    assert await a.run("stun-flows", a.gateway, turn, 1, 12, source=spoofed) == ["0"]
    stats = await relay.refresh_stats()
    assert 7 <= stats.binding_rate_drops <= 8
    assert stats.acl_blocked["udp"] == 0
