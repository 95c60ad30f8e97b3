"""Where an authenticated allocation may send (decision 0704): TURN used as an open proxy into the
operator's own network, its host, or cloud metadata services. Test hosts hold real credentials,
as every room guest does, and attack from their namespaces over IPv4 and IPv6."""

from __future__ import annotations

import ipaddress
import socket
import uuid

import pytest

from switchboard.kit.clock import ManualClock, SystemClock
from switchboard.relay.credentials import turn_credentials
from switchboard.relay.server import RelayServer, coturn_gid
from switchboard.relay.settings import RelaySettings
from tests.ports import free_port
from tests.relay.conftest import SECRET, NetHost, dual_stack, running

pytestmark = pytest.mark.slow


@pytest.fixture
def relay_database(sqlite_database: str) -> str:
    return sqlite_database


@pytest.fixture
def relay_settings(relay_settings: RelaySettings, hosts: tuple[NetHost, NetHost]) -> RelaySettings:
    """Dual-stack; the flow quota leaves room for the many allocations of one test."""
    return dual_stack(relay_settings.model_copy(update={"per_ip_allocations": 50}), *hosts)


def credentials() -> tuple[str, str]:
    """A fresh credential per allocation (coturn's user quota counts per username)."""
    return turn_credentials(
        secret=SECRET, label=f"guest-{uuid.uuid4().hex[:8]}", clock=SystemClock(), ttl=600
    )


def local_sink(address: str) -> socket.socket:
    """A UDP service of the relay's own host, as the platform's SIP port would be."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sink = socket.socket(family, socket.SOCK_DGRAM)
    sink.bind((address, free_port()))
    sink.setblocking(False)
    return sink


def received(sink: socket.socket) -> bytes | None:
    """What reached the sink by now; the relay had acknowledged a later request of the same
    session when the client returned, so anything relayed has arrived."""
    try:
        return sink.recv(2048)
    except BlockingIOError:
        return None


async def test_an_allocation_reaches_no_service_of_the_relay_host(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    a, b = hosts
    paths = (("udp", relay.settings.turn_port), ("tcp", relay.settings.turn_port),
             ("tls", relay.tls_ports[0]))  # fmt: skip
    # The relay address itself, another address of the host, and the host's IPv6 address.
    for address, family in ((a.gateway, 1), (b.gateway, 1), (a.gateway6, 2)):
        sink = local_sink(address)
        port = sink.getsockname()[1]
        try:
            for transport, server in paths:
                [sent] = await a.run(
                    "turn-send", a.gateway, server, transport, *credentials(), address, port, family
                )
                assert sent.startswith("sent "), (address, transport, sent)
                assert received(sink) is None, (address, transport)
        finally:
            sink.close()
    stats = await relay.refresh_stats()
    assert stats.relay_to_self_drops == 9
    assert "relay_to_self_drops=9" in stats.line()
    # A peer outside the host still gets what an allocation sends it.
    outside = await b.start("udp-sink", b.address, 40000, 5)
    await b.ready(outside)
    [sent] = await a.run("turn-send", a.gateway, relay.settings.turn_port, "udp", *credentials(),
                         b.address, 40000, 1)  # fmt: skip
    assert sent.startswith("sent ")
    assert await b.finish(outside) == [f"relayed-by-turn from {a.gateway}"]


async def test_two_peers_relayed_by_the_same_relay_still_reach_each_other(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    """Both allocations live on the relay's own address: from one relay port to another is
    the one way to the host's addresses the packet filter keeps open."""
    a, b = hosts
    turn = relay.settings.turn_port
    assert await b.run("turn-pair", a.gateway, turn, "udp", *credentials()) == ["delivered"]
    assert await b.run("turn-pair", a.gateway, relay.tls_ports[1], "tls", *credentials()) == [
        "delivered"
    ]
    assert await b.run("turn-pair", a.gateway6, turn, "udp", *credentials()) == ["delivered"]


async def test_tcp_allocations_are_refused(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    """RFC 6062 TCP allocations would let a guest open TCP connections anywhere from the
    relay's address; media needs none, so coturn refuses them (442 Unsupported Transport)."""
    a, b = hosts
    listener = socket.create_server((b.gateway, 0))
    try:
        for transport, port in (("tcp", relay.settings.turn_port), ("tls", relay.tls_ports[0])):
            [answer] = await a.run("turn-tcp", a.gateway, port, transport, *credentials(),
                                   b.gateway, listener.getsockname()[1])  # fmt: skip
            assert answer == "refused 442"
    finally:
        listener.close()


DENIED_V4 = ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
             "100.100.100.200", "168.63.129.16", "0.0.0.0", "224.0.0.1"]  # fmt: skip
DENIED_V6 = ["::1", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
             "::ffff:203.0.113.7", "64:ff9b::a9fe:a9fe", "64:ff9b::10.0.0.1", "64:ff9b:1::a00:1",
             "ff02::1", "::"]  # fmt: skip


async def test_private_loopback_metadata_and_disguised_addresses_are_refused_as_peers(
    relay: RelayServer, hosts: tuple[NetHost, NetHost]
) -> None:
    a, b = hosts
    turn = relay.settings.turn_port
    answers = await a.run("turn-permits", a.gateway, turn, "udp", *credentials(), 1,
                          *DENIED_V4, b.address)  # fmt: skip
    assert answers == ["403"] * len(DENIED_V4) + ["ok"]
    # IPv4 spelled as IPv6 (mapped, NAT64) is judged as the IPv4 address it reaches: denied.
    answers = await a.run("turn-permits", a.gateway6, turn, "udp", *credentials(), 2,
                          *DENIED_V6, b.address6, "64:ff9b::203.0.113.7")  # fmt: skip
    assert answers == ["403"] * len(DENIED_V6) + ["ok", "ok"]


async def test_the_operators_denied_peers_are_refused_and_other_peers_relayed(
    relay_settings: RelaySettings, hosts: tuple[NetHost, NetHost], clock: ManualClock
) -> None:
    """Host b stands for another public host of the operator (their database, an admin panel):
    listed in SWITCHBOARD_RELAY_DENIED_PEERS (decision 0707), its network is refused as a peer
    in both families and in IPv6 spellings of its IPv4 address; host a is still relayed to."""
    a, b = hosts
    ours = (str(ipaddress.ip_network(f"{b.address}/30", strict=False)), f"{b.prefix6}::/64")
    async with running(relay_settings.model_copy(update={"denied_peers": ours}), clock) as relay:
        turn = relay.settings.turn_port
        answers = await a.run("turn-permits", a.gateway, turn, "udp", *credentials(), 1,
                              b.address, a.address)  # fmt: skip
        assert answers == ["403", "ok"]
        answers = await a.run("turn-permits", a.gateway6, turn, "udp", *credentials(), 2,
                              b.address6, f"64:ff9b::{b.address}", f"::ffff:{b.address}",
                              a.address6, f"64:ff9b::{a.address}")  # fmt: skip
        assert answers == ["403", "403", "403", "ok", "ok"]
        [sent] = await a.run("turn-send", a.gateway, relay.tls_ports[0], "tls", *credentials(),
                             b.address, 40000, 1)  # fmt: skip
        assert sent == "refused 403"
        sink = await a.start("udp-sink", a.address, 40000, 5)
        await a.ready(sink)
        [sent] = await b.run("turn-send", a.gateway, turn, "udp", *credentials(),
                             a.address, 40000, 1)  # fmt: skip
        assert sent.startswith("sent ")
        assert await a.finish(sink) == [f"relayed-by-turn from {a.gateway}"]


@pytest.mark.parametrize(("group", "message"), [("no-such-group", "no group"), ("root", "root")])
def test_serve_refuses_a_coturn_group_it_cannot_tell_apart(
    relay_settings: RelaySettings, group: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        coturn_gid(relay_settings.model_copy(update={"coturn_group": group}))
