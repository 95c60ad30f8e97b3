"""The rules for IPv6 clients, from test hosts that hold a /64 each: a /64 is one client for the
auto-blacklist, the quotas and the binding rate (decision 0705), and the IPv6 loopback,
link-local and unique-local addresses are exempt (spec 8.2.3)."""

from __future__ import annotations

import asyncio
import random

import pytest

from switchboard.kit.clock import ManualClock
from switchboard.relay.server import RelayServer
from switchboard.relay.settings import RelaySettings
from tests.relay.conftest import NetHost, dual_stack

pytestmark = pytest.mark.slow

HOUR = 3600


@pytest.fixture
def relay_database(sqlite_database: str) -> str:
    return sqlite_database


@pytest.fixture
def unique_local() -> str:
    """A /64 of fc00::/7 (a unique-local prefix) for host a's link."""
    return f"fd{random.randrange(0x100):02x}:{random.randrange(0x10000):x}:1:1"


@pytest.fixture
def relay_settings(
    relay_settings: RelaySettings, hosts: tuple[NetHost, NetHost], unique_local: str
) -> RelaySettings:
    a, _ = hosts
    a.add_link6(unique_local)
    a.add_link6("fe80:0:0:0")  # fe80::1 on the relay side, fe80::2 on the host's
    return dual_stack(relay_settings, *hosts, listen=("::1", f"{unique_local}::1"))


def addresses_of(host: NetHost, count: int) -> list[str]:
    """``count`` more addresses of the host's /64, as any host may use."""
    return [host.add_address6(f"{n:x}") for n in range(0x10, 0x10 + count)]


async def test_the_auto_blacklist_blocks_the_64(
    relay: RelayServer, hosts: tuple[NetHost, NetHost], clock: ManualClock
) -> None:
    a, b = hosts
    port = relay.tls_ports[0]
    sources = addresses_of(a, 7)
    for source in sources[:6]:  # one failed handshake from each of six addresses
        assert await a.run("tls-garbage", a.gateway6, port, source=source) == ["closed"]
    assert relay.stats.auto_blocks == 1
    assert await a.run("tls", a.gateway6, port, source=sources[6]) == ["refused"]
    assert await a.run("tls", a.gateway6, relay.tls_ports[1]) == ["refused"]
    assert await b.run("tls", b.gateway6, port) == ["ok relay-one"]  # another /64
    assert await a.run("tls", a.gateway, port) == ["ok relay-one"]  # a's IPv4 is another client
    clock.advance(HOUR)
    assert await a.run("tls", a.gateway6, port, source=sources[6]) == ["ok relay-one"]


async def test_the_quotas_and_the_binding_rate_count_the_64(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    """Two concurrent TLS connections and two flows per client in the tests; a binding burst
    of four, then one a second."""
    a, b = hosts
    tls, turn = relay.tls_ports[0], relay.settings.turn_port
    first, second, third = addresses_of(a, 3)
    holders = [asyncio.create_task(a.run("tls-hold", a.gateway6, tls, 3, source=source))
               for source in (first, second)]  # fmt: skip
    for _ in range(200):
        if relay.stats.tls_accepted == 2:
            break
        await asyncio.sleep(0.02)
    assert await a.run("tls", a.gateway6, tls, source=third) == ["refused"]
    assert relay.stats.quota_rejects["tls"] == 1
    assert await asyncio.gather(*holders) == [["done"], ["done"]]
    answers = [(await a.run("stun-flows", a.gateway6, turn, 1, 1, source=s))[0]
               for s in (first, second, third)]  # fmt: skip
    assert answers == ["1", "1", "0"]
    assert (await relay.refresh_stats()).quota_rejects["turn"] == 1
    b_first, b_second = addresses_of(b, 2)
    [one] = await b.run("stun-flows", b.gateway6, turn, 1, 4, source=b_first)
    [two] = await b.run("stun-flows", b.gateway6, turn, 1, 4, source=b_second)
    assert one == "4"
    assert int(two) <= 2  # the burst is spent: the refill, not a fresh burst
    assert (await relay.refresh_stats()).binding_rate_drops == 4 - int(two)


async def test_ipv6_loopback_link_local_and_unique_local_clients_are_exempt(
    relay: RelayServer, hosts: tuple[NetHost, NetHost], loopback: NetHost, unique_local: str
) -> None:
    a, _ = hosts
    tls, turn = relay.tls_ports[0], relay.settings.turn_port
    link_local = "fe80::1%eth0"
    for host, server in ((loopback, "::1"), (a, f"{unique_local}::1"), (a, link_local)):
        assert await host.run("tls-garbage", server, tls, count=8) == ["closed"] * 8
        assert await host.run("tls", server, tls) == ["ok relay-one"], server
    assert relay.stats.handshake_failures["error"] == 24
    assert relay.stats.auto_blocks == 0
    # Neither the binding rate nor the flow quota applies (a burst of 4, 2 flows elsewhere).
    for host, server in ((loopback, "::1"), (a, f"{unique_local}::1")):
        assert await host.run("stun-flows", server, turn, 3, 6) == ["6,6,6"], server
    stats = await relay.refresh_stats()
    assert stats.binding_rate_drops == 0
    assert stats.quota_rejects == {"tls": 0, "turn": 0}
