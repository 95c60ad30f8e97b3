"""Allocations through the guard, the TLS auto-blacklist, certificates and the stats, with real
traffic from test hosts in network namespaces. These never touch the ACL, so one SQLite
database serves them (tests/relay/test_relay_acl.py runs on both backends)."""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import shutil
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from switchboard.kit.clock import ManualClock, SystemClock
from switchboard.relay.server import RelayServer
from switchboard.relay.settings import RelaySettings
from tests.relay.conftest import SECRET, Certificates, NetHost, rest_credentials, running

pytestmark = pytest.mark.slow


@pytest.fixture
def relay_database(sqlite_database: str) -> str:
    return sqlite_database


HOUR = 3600


async def test_an_allowed_host_allocates_through_every_path(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    a, _ = hosts
    user, password = rest_credentials()
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
    user, password = rest_credentials()  # the UDP path is not the TLS accept layer
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
    relay_settings: RelaySettings,
    hosts: tuple[NetHost, NetHost],
    certificates: Certificates,
    clock: ManualClock,
    tmp_path: Path,
) -> None:
    a, b = hosts
    missing = relay_settings.model_copy(
        update={"cert_file": tmp_path / "later.pem", "key_file": tmp_path / "later-key.pem"}
    )
    # no certificate yet: the relay runs, and every handshake fails
    async with running(missing, clock) as relay:
        port = relay.tls_ports[0]
        assert await b.run("tls", b.gateway, port, count=6) == ["refused"] * 6
        stats = await relay.refresh_stats()
        assert stats.handshake_failures == {"no_certificate": 6, "timeout": 0, "error": 0}
        assert stats.auto_blocks == 1
        assert stats.currently_blocked == 1
        metrics = generate_latest(relay.registry).decode()
        assert (
            'switchboard_relay_tls_handshake_failures_total{reason="no_certificate"} 6.0' in metrics
        )
        assert "switchboard_relay_tls_blocked_ips 1.0" in metrics
        # The certificate arrives: the next tick loads it without a restart.
        shutil.copyfile(certificates.cert_file, missing.cert_file)
        shutil.copyfile(certificates.key_file, missing.key_file)
        await relay.tick()
        assert await a.run("tls", a.gateway, port) == ["ok relay-one"]
        assert await b.run("tls", b.gateway, port) == ["refused"]  # still auto-blocked
        assert relay.stats.cert_reloads == 0  # a first load is not a reload
        # A client that connects and says nothing fails by the handshake timeout.
        assert await a.run("stall", a.gateway, port) == ["closed"]
        assert relay.stats.handshake_failures == {"no_certificate": 6, "timeout": 1, "error": 0}


async def test_coturn_is_restarted_when_it_dies(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    a, _ = hosts
    process = relay.coturn.process
    assert process is not None
    process.kill()
    for _ in range(300):
        if relay.coturn.restarts == 1 and relay.coturn.process is not process:
            break
        await asyncio.sleep(0.05)
    assert relay.coturn.restarts == 1
    await relay.coturn.wait_ready()
    user, password = rest_credentials()
    [result] = await a.run("turn", a.gateway, relay.tls_ports[0], "tls", user, password)
    assert result.startswith(f"relayed {a.gateway} ")


async def test_handshakes_in_flight_when_the_block_falls_neither_block_again_nor_extend_it(
    relay_settings: RelaySettings, hosts: tuple[NetHost, NetHost], clock: ManualClock
) -> None:
    a, _ = hosts
    settings = relay_settings.model_copy(update={"per_ip_allocations": 20})
    async with running(settings, clock) as relay:
        port = relay.tls_ports[0]
        # Six connections that say nothing: their handshakes run until the timeout.
        stalls = [asyncio.create_task(a.run("stall", a.gateway, port)) for _ in range(6)]
        for _ in range(500):
            if relay.guard.open_connections() == 6:
                break
            await asyncio.sleep(0.02)
        assert await a.run("tls-garbage", a.gateway, port, count=6) == ["closed"] * 6
        assert relay.stats.auto_blocks == 1
        clock.advance(600)  # the stalled handshakes fail ten minutes into the block
        assert await asyncio.gather(*stalls) == [["closed"]] * 6
        stats = await relay.refresh_stats()
        assert stats.handshake_failures == {"no_certificate": 0, "timeout": 6, "error": 6}
        assert stats.auto_blocks == 1
        clock.advance(HOUR - 600 - 1)
        assert await a.run("tls", a.gateway, port) == ["refused"]
        clock.advance(1)  # one hour after the sixth failure, not after the twelfth
        assert await a.run("tls", a.gateway, port) == ["ok relay-one"]
        assert "auto_blocks=1 currently_blocked=0" in (await relay.refresh_stats()).line()


def _free_descriptors(count: int) -> list[int]:
    """The ``count`` lowest descriptor numbers this process has free."""
    lowest = os.open(os.devnull, os.O_RDONLY)  # the number listdir's own descriptor takes
    os.close(lowest)
    used = {int(fd) for fd in os.listdir("/proc/self/fd")} - {lowest}
    return [fd for fd in range(len(used) + count + 1) if fd not in used][:count]


async def test_a_relay_out_of_descriptors_blames_no_client(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    """While the relay has descriptors enough to accept a connection but none to serve it (as
    when a flood has taken them), six clean handshakes of a host fail: the relay's trouble,
    which neither counts as handshake failures nor blocks the host."""
    a, _ = hosts
    port = relay.tls_ports[0]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    client = await a.start("tls", a.gateway, port, count=6)
    # Descriptor numbers below the limit: one is free, for the accepted socket.
    resource.setrlimit(resource.RLIMIT_NOFILE, (_free_descriptors(2)[1], hard))
    try:
        assert await a.finish(client) == ["refused"] * 6
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert relay.stats.handshake_failures_total == 0
    assert relay.stats.auto_blocks == 0
    assert await a.run("tls", a.gateway, port) == ["ok relay-one"]


async def test_attacks_leave_no_descriptor_nor_task_behind(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    a, b = hosts
    port, turn = relay.tls_ports[0], relay.settings.turn_port
    user, password = rest_credentials()
    [relayed] = await b.run("turn", b.gateway, port, "tls", user, password)
    assert relayed.startswith("relayed ")
    descriptors, tasks = len(os.listdir("/proc/self/fd")), len(asyncio.all_tasks())
    # A stalled handshake, failed ones up to the auto-block, refusals while blocked, a quota
    # refusal, floods on the TURN port, and sessions that end mid-way.
    assert await a.run("stall", a.gateway, port) == ["closed"]
    assert await a.run("tls-garbage", a.gateway, port, count=5) == ["closed"] * 5
    assert await a.run("tls", a.gateway, relay.tls_ports[1], count=3) == ["refused"] * 3
    holders = [asyncio.create_task(b.run("tls-hold", b.gateway, port, 1)) for _ in range(2)]
    for _ in range(200):
        if relay.guard.open_connections() == 2:
            break
        await asyncio.sleep(0.02)
    assert await b.run("tls", b.gateway, port) == ["refused"]
    assert await asyncio.gather(*holders) == [["done"], ["done"]]
    await a.run("stun-flows", a.gateway, turn, 4, 10)
    await b.run("turn", b.gateway, turn, "tcp", user, password, count=2)
    stats = await relay.refresh_stats()
    assert (stats.auto_blocks, stats.blocked_rejects, stats.quota_rejects["tls"]) == (1, 3, 1)
    for _ in range(200):  # the guard closes what it served once the clients are gone
        if len(os.listdir("/proc/self/fd")) == descriptors and relay.guard.open_connections() == 0:
            break
        await asyncio.sleep(0.02)
    assert len(os.listdir("/proc/self/fd")) == descriptors
    assert len(asyncio.all_tasks()) == tasks
    [relayed] = await b.run("turn", b.gateway, port, "tls", user, password)
    assert relayed.startswith("relayed ")


async def test_the_cap_on_connections_held_refuses_past_it_on_every_tcp_path(
    relay_settings: RelaySettings, hosts: tuple[NetHost, NetHost], clock: ManualClock
) -> None:
    """``SWITCHBOARD_RELAY_MAX_CONNECTIONS`` (decision 0708): with three connections held from
    two public hosts, each under its own quota, the next TLS or plain TCP connection of either
    is refused and counted; once they end, connections are taken again."""
    a, b = hosts
    settings = relay_settings.model_copy(update={"max_connections": 3})
    async with running(settings, clock) as relay:
        port, turn = relay.tls_ports[0], settings.turn_port
        holders = [asyncio.create_task(a.run("tls-hold", a.gateway, port, 3)) for _ in range(2)]
        holders.append(asyncio.create_task(b.run("tls-hold", b.gateway, port, 3)))
        for _ in range(250):
            if relay.guard.held_connections() == 3:
                break
            await asyncio.sleep(0.02)
        assert await b.run("tls", b.gateway, port) == ["refused"]
        user, password = rest_credentials()
        [plain] = await b.run("turn", b.gateway, turn, "tcp", user, password)
        assert plain.startswith("failed"), plain
        assert relay.stats.cap_rejects == {"tls": 1, "tcp": 1}
        assert relay.stats.quota_rejects["tls"] == 0
        assert "| cap_rejects tls=1 tcp=1" in relay.stats.line()
        metrics = generate_latest(relay.registry).decode()
        assert 'switchboard_relay_cap_rejects_total{path="tcp"} 1.0' in metrics
        assert await asyncio.gather(*holders) == [["done"]] * 3
        for _ in range(250):
            if relay.guard.held_connections() == 0:
                break
            await asyncio.sleep(0.02)
        assert await b.run("tls", b.gateway, port) == ["ok relay-one"]
        [result] = await b.run("turn", b.gateway, turn, "tcp", user, password)
        assert result.startswith("relayed"), result
