"""The relay's rules proven with real traffic from test hosts in network namespaces."""

from __future__ import annotations

import asyncio
import logging

import pytest
from prometheus_client import generate_latest

from switchboard.kit.clock import ManualClock, SystemClock
from switchboard.relay import service
from switchboard.relay.addresses import parse_address
from switchboard.relay.credentials import turn_credentials
from switchboard.relay.server import RelayServer
from tests.relay.conftest import SECRET, Certificates, NetHost

pytestmark = pytest.mark.slow

HOUR = 3600


async def acl(relay: RelayServer, action: str, *args: str, scope: str = "any") -> int:
    """Change the ACL in the database from a session of its own, as `switchboard relay acl`
    does (tests/relay/test_acl_cli.py drives the command itself); the relay sees it at its next
    tick."""
    async with relay.database.transaction() as session:
        if action == "remove":
            await service.remove_rule(session, rule_id=int(args[0]))
            return int(args[0])
        rule = await service.add_rule(
            session, subject=args[0], value=args[1], scope=scope, note="", clock=relay.clock
        )
        return rule.id


def creds() -> tuple[str, str]:
    # coturn checks the expiry against the real time, so these use the system clock.
    return turn_credentials(secret=SECRET, label="test-room", clock=SystemClock(), ttl=600)


async def test_an_allowed_host_allocates_through_every_path(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    a, _ = hosts
    user, password = creds()
    turn = relay.settings.turn_port
    for port, transport in ((relay.tls_ports[0], "tls"), (relay.tls_ports[1], "tls"),
                            (turn, "udp"), (turn, "tcp")):  # fmt: skip
        [result] = await a.run("turn", a.gateway, port, transport, user, password)
        assert result.startswith(f"relayed {a.gateway} "), (transport, result)
        assert (
            relay.settings.min_relay_port <= int(result.split()[2]) <= relay.settings.max_relay_port
        )
    # A wrong or expired credential is refused by coturn.
    [refused] = await a.run("turn", a.gateway, relay.tls_ports[0], "tls", user, "wrong")
    assert "401" in refused
    expired_user = f"{int(SystemClock().now().timestamp()) - 10}:test-room"
    from switchboard.relay.credentials import turn_password

    [refused] = await a.run(
        "turn", a.gateway, turn, "udp", expired_user, turn_password(SECRET, expired_user)
    )
    assert "401" in refused
    assert relay.stats.tls_accepted == 3


async def test_tls_auto_blacklist(
    relay: RelayServer,
    hosts: tuple[NetHost, NetHost],
    clock: ManualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    a, b = hosts
    port = relay.tls_ports[0]
    assert await a.run("tls-garbage", a.gateway, port, count=5) == ["closed"] * 5
    assert await a.run("tls", a.gateway, port) == ["ok relay-one"]  # five failures do not block
    assert await a.run("tls-garbage", a.gateway, port) == ["closed"]  # the sixth does
    assert relay.stats.auto_blocks == 1
    assert await a.run("tls", a.gateway, port) == ["refused"]
    assert await a.run("tls", a.gateway, relay.tls_ports[1]) == ["refused"]  # on every TLS port
    assert await b.run("tls", b.gateway, port) == ["ok relay-one"]  # other hosts are unaffected
    user, password = creds()  # the UDP path is not the TLS accept layer
    [result] = await a.run("turn", a.gateway, relay.settings.turn_port, "udp", user, password)
    assert result.startswith("relayed")
    clock.advance(HOUR - 1)
    assert await a.run("tls", a.gateway, port) == ["refused"]
    with caplog.at_level(logging.INFO, logger="switchboard.relay"):
        await relay.tick()
    [line] = [r.getMessage() for r in caplog.records if "relay stats:" in r.getMessage()]
    assert "tls_accepted=2 " in line
    assert "handshake_failures=6 (no_certificate=0 timeout=0 error=6)" in line
    assert "auto_blocks=1 currently_blocked=1 blocked_rejects=3" in line
    clock.advance(1)
    assert await a.run("tls", a.gateway, port) == ["ok relay-one"]
    await relay.refresh_stats()
    assert relay.stats.currently_blocked == 0


async def test_failures_spread_over_more_than_five_minutes_do_not_block(
    relay: RelayServer, hosts: tuple[NetHost, NetHost], clock: ManualClock
) -> None:
    a, _ = hosts
    port = relay.tls_ports[0]
    assert await a.run("tls-garbage", a.gateway, port, count=5) == ["closed"] * 5
    clock.advance(301)
    assert await a.run("tls-garbage", a.gateway, port) == ["closed"]
    assert await a.run("tls", a.gateway, port) == ["ok relay-one"]
    assert relay.stats.auto_blocks == 0


async def test_loopback_is_never_blocked(relay: RelayServer, loopback: NetHost) -> None:
    port = relay.tls_ports[0]
    await acl(relay, "add", "cidr", "127.0.0.0/8")
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
    await acl(relay, "add", "ip", b.address, scope="pstn-outbound")
    await relay.tick()
    assert await a.run("stun", a.gateway, turn) == ["silent"]
    assert await a.run("tcp", a.gateway, turn) == ["dropped"]
    assert await a.run("tls", a.gateway, tls) == ["refused"]
    # pstn-outbound is not a scope of the relay's accept paths.
    assert await b.run("stun", b.gateway, turn) == ["answered"]
    assert await b.run("tls", b.gateway, tls) == ["ok relay-one"]
    await acl(relay, "add", "ip", b.address, scope="any")
    await relay.tick()
    assert await b.run("stun", b.gateway, turn) == ["silent"]
    assert await b.run("tls", b.gateway, tls) == ["refused"]
    stats = await relay.refresh_stats()
    assert stats.acl_blocked["udp"] == 4  # two probes per silent STUN attempt
    assert stats.acl_blocked["tcp"] >= 1  # SYN retransmits may add more
    assert stats.acl_blocked["tls"] == 2
    assert stats.handshake_failures_total == 0  # dropped before any handshake
    await acl(relay, "remove", str(a_rule))
    await relay.tick()
    assert await a.run("stun", a.gateway, turn) == ["answered"]
    assert await a.run("tls", a.gateway, tls) == ["ok relay-one"]


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


async def test_certificates_reload_without_restart(
    relay: RelayServer, hosts: tuple[NetHost, NetHost], certificates: Certificates
) -> None:
    a, _ = hosts
    port = relay.tls_ports[0]
    assert await a.run("tls", a.gateway, port) == ["ok relay-one"]
    certificates.issue("relay-two")
    await relay.tick()
    assert await a.run("tls", a.gateway, port) == ["ok relay-two"]
    certificates.cert_file.write_text("not a certificate")  # a broken renewal keeps the old one
    await relay.tick()
    assert await a.run("tls", a.gateway, port) == ["ok relay-two"]
    assert relay.stats.cert_reloads == 1
    metrics = generate_latest(relay.registry).decode()
    assert "switchboard_relay_cert_reloads_total 1.0" in metrics
    assert "switchboard_relay_tls_accepted_total 3.0" in metrics


async def test_no_certificate_and_handshake_timeout_count_as_failures(
    relay: RelayServer, hosts: tuple[NetHost, NetHost], certificates: Certificates
) -> None:
    a, b = hosts
    port = relay.tls_ports[0]
    assert await a.run("stall", a.gateway, port) == ["closed"]
    relay.certificates.context = None  # as when the files were missing at start
    assert await b.run("tls", b.gateway, port, count=6) == ["refused"] * 6
    stats = await relay.refresh_stats()
    assert stats.handshake_failures == {"no_certificate": 6, "timeout": 1, "error": 0}
    assert stats.auto_blocks == 1
    assert stats.currently_blocked == 1
    metrics = generate_latest(relay.registry).decode()
    assert 'switchboard_relay_tls_handshake_failures_total{reason="no_certificate"} 6.0' in metrics
    assert "switchboard_relay_tls_blocked_ips 1.0" in metrics
