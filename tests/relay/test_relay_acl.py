"""The ACL, the exemption and the precedence of the rules, with real traffic from test hosts in
network namespaces, on both database backends (the relay reads the ACL from the database)."""

from __future__ import annotations

import asyncio

import pytest

from switchboard.kit.clock import ManualClock
from switchboard.relay import service
from switchboard.relay.addresses import parse_address
from switchboard.relay.models import RelayAclRule
from switchboard.relay.server import RelayServer
from switchboard.relay.settings import RelaySettings
from tests.relay.conftest import NetHost, acl, dual_stack, running

pytestmark = pytest.mark.slow

HOUR = 3600


async def test_loopback_is_never_blocked(relay: RelayServer, loopback: NetHost) -> None:
    port = relay.tls_ports[0]
    with pytest.raises(service.AclError, match="never blocked"):
        await acl(relay, "add", "cidr", "127.0.0.0/8")
    # A rule stored before that refusal still never blocks loopback.
    async with relay.database.transaction() as session:
        session.add(RelayAclRule(subject="cidr", value="127.0.0.0/8", scope="any", note="",
                                 created_at=relay.clock.now()))  # fmt: skip
    await relay.tick()
    assert await loopback.run("tls-garbage", "127.0.0.1", port, count=8) == ["closed"] * 8
    assert await loopback.run("tls", "127.0.0.1", port) == ["ok relay-one"]
    assert await loopback.run("stun", "127.0.0.1", relay.settings.turn_port) == ["answered"]
    assert relay.stats.auto_blocks == 0
    assert relay.stats.handshake_failures["error"] == 8
    assert relay.stats.acl_blocked["tls"] == 0


async def test_acl_cidr_and_scope_rules_drop_traffic_and_reload_hot(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    a, b = hosts
    tls, turn = relay.tls_ports[0], relay.settings.turn_port
    a_net = a.address.rsplit(".", 1)[0] + f".{int(a.address.rsplit('.', 1)[1]) & ~3}/30"
    a_rule = await acl(relay, "add", "cidr", a_net, scope="sip-inbound")
    assert await b.run("stun", b.gateway, turn) == ["answered"]
    await acl(relay, "add", "ip", b.address, scope="pstn-outbound")
    await relay.tick()
    assert await a.run("stun", a.gateway, turn) == ["silent"]
    assert await a.run("tcp", a.gateway, turn) == ["dropped"]
    assert await a.run("tls", a.gateway, tls) == ["refused"]
    assert await a.run("tls", a.gateway, relay.tls_ports[1]) == ["refused"]  # both TLS ports
    # Each of the three scopes applies to the relay's accept paths (spec 8.2.2).
    assert await b.run("stun", b.gateway, turn) == ["silent"]
    assert await b.run("tls", b.gateway, tls) == ["refused"]
    stats = await relay.refresh_stats()
    assert stats.acl_blocked["udp"] == 4  # two probes per silent STUN attempt
    assert stats.acl_blocked["tcp"] >= 1  # SYN retransmits may add more
    assert stats.acl_blocked["tls"] == 3
    assert stats.handshake_failures_total == 0  # dropped before any handshake
    await acl(relay, "remove", str(a_rule))
    await relay.tick()
    assert await a.run("stun", a.gateway, turn) == ["answered"]
    assert await a.run("tls", a.gateway, tls) == ["ok relay-one"]


async def test_acl_rules_drop_ipv6_clients_by_the_addresses_they_name(
    relay_settings: RelaySettings, hosts: tuple[NetHost, NetHost], clock: ManualClock
) -> None:
    a, b = hosts
    async with running(dual_stack(relay_settings, a, b), clock) as relay:
        tls, turn = relay.tls_ports[0], relay.settings.turn_port
        await acl(relay, "add", "cidr", f"{a.prefix6}::/64", scope="sip-inbound")
        await acl(relay, "add", "ip", b.address6, scope="pstn-outbound")
        await relay.tick()
        assert await a.run("stun", a.gateway6, turn) == ["silent"]
        assert await a.run("tcp", a.gateway6, turn) == ["dropped"]
        assert await a.run("tls", a.gateway6, tls) == ["refused"]
        assert await b.run("stun", b.gateway6, turn) == ["silent"]
        assert await b.run("tls", b.gateway6, tls) == ["refused"]
        # A rule names addresses: b's other addresses and a's IPv4 address are not listed.
        other = b.add_address6("7")
        assert await b.run("stun", b.gateway6, turn, source=other) == ["answered"]
        assert await b.run("tls", b.gateway6, tls, source=other) == ["ok relay-one"]
        assert await a.run("tls", a.gateway, tls) == ["ok relay-one"]
        stats = await relay.refresh_stats()
        assert stats.acl_blocked["udp"] == 4
        assert stats.acl_blocked["tls"] == 2


async def test_precedence_acl_then_auto_blacklist_then_quota(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    a, b = hosts
    port = relay.tls_ports[0]
    # Quota (2 concurrent connections per IP in the tests): the third is refused.
    holders = [asyncio.create_task(b.run("tls-hold", b.gateway, port, 3)) for _ in range(2)]
    for _ in range(200):
        if relay.stats.tls_accepted == 2:
            break
        await asyncio.sleep(0.02)
    assert await b.run("tls", b.gateway, port) == ["refused"]
    assert relay.stats.quota_rejects["tls"] == 1
    # Auto-blocked beats the quota: while b is over its quota, blocking it (as six failed
    # handshakes would; b cannot handshake while over quota) makes its refusals blocks.
    for _ in range(6):
        relay.guard.tracker.record_failure(parse_address(b.address), relay.clock.now())
    assert await b.run("tls", b.gateway, port) == ["refused"]
    assert relay.stats.blocked_rejects == 1
    assert relay.stats.quota_rejects["tls"] == 1
    assert await asyncio.gather(*holders) == [["done"], ["done"]]
    # The ACL beats the auto-blacklist; an ACL drop never counts as a handshake failure.
    await acl(relay, "add", "ip", b.address)
    await relay.tick()
    assert await b.run("tls", b.gateway, port) == ["refused"]
    assert relay.stats.acl_blocked["tls"] == 1
    assert relay.stats.blocked_rejects == 1
    await acl(relay, "add", "ip", a.address)
    await relay.tick()
    assert await a.run("tls-garbage", a.gateway, port, count=7) == ["closed"] * 7
    assert relay.stats.handshake_failures["error"] == 0
    assert relay.stats.auto_blocks == 0


async def test_per_ip_flow_quota_and_binding_rate_on_the_turn_port(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    a, b = hosts
    turn = relay.settings.turn_port
    # Two concurrent flows per IP in the tests: a third source port gets no answer.
    assert await a.run("stun-flows", a.gateway, turn, 3, 1) == ["1,1,0"]
    stats = await relay.refresh_stats()
    assert stats.quota_rejects["turn"] == 1
    # Unauthenticated Binding requests: a burst of 4, then 1/s per IP; the rest are dropped.
    [answers] = await b.run("stun-flows", b.gateway, turn, 1, 12)
    assert 4 <= int(answers) <= 6
    stats = await relay.refresh_stats()
    assert stats.binding_rate_drops == 12 - int(answers)
    # A second flow of b is within its flow quota: its Bindings are over the rate, not the quota.
    [more] = await b.run("stun-flows", b.gateway, turn, 1, 4)
    stats = await relay.refresh_stats()
    assert stats.binding_rate_drops == 16 - int(answers) - int(more)
    assert stats.quota_rejects["turn"] == 1
    # The ACL comes first: a blocked host's requests count as ACL drops, not as rate drops.
    await acl(relay, "add", "ip", b.address)
    await relay.tick()
    assert await b.run("stun-flows", b.gateway, turn, 1, 12) == ["0"]
    stats = await relay.refresh_stats()
    assert stats.acl_blocked["udp"] == 12
    assert stats.binding_rate_drops == 16 - int(answers) - int(more)
