"""The pure rules: the exemption, the ACL match, the bounded TLS failure tracker, credentials."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress

import pytest

from switchboard.kit.clock import ManualClock
from switchboard.relay.acl import Acl, Rule, normalize, public_part
from switchboard.relay.addresses import client_of, is_exempt, parse_address
from switchboard.relay.credentials import ice_servers, turn_credentials
from switchboard.relay.stats import RelayStats, StatsTicker
from switchboard.relay.tracker import FailureTracker


@pytest.mark.parametrize(
    "address",
    ["10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "127.0.0.1", "127.8.8.8",
     "169.254.10.10", "::1", "fd00::1", "fe80::1", "::ffff:10.0.0.1", "fe80::1%eth0"],
)  # fmt: skip
def test_private_loopback_and_link_local_are_exempt(address: str) -> None:
    assert is_exempt(parse_address(address))


@pytest.mark.parametrize(
    "address",
    # Python calls the documentation, benchmarking, CGNAT and reserved ranges private; the relay
    # does not, so rules apply to them.
    ["203.0.113.7", "198.51.100.1", "192.0.2.1", "198.18.0.1", "100.64.0.1", "240.0.0.1",
     "172.32.0.1", "8.8.8.8", "2001:db8::1", "::ffff:203.0.113.7", "2a00:1450::1"],
)  # fmt: skip
def test_other_addresses_are_not_exempt(address: str) -> None:
    assert not is_exempt(parse_address(address))


def test_documentation_ranges_are_private_to_python_but_not_to_the_relay() -> None:
    assert ipaddress.ip_address("203.0.113.7").is_private
    assert not is_exempt(parse_address("203.0.113.7"))


def test_acl_matches_ip_and_cidr_in_every_scope() -> None:
    acl = Acl(
        [
            Rule("cidr", "203.0.113.0/28", "sip-inbound"),
            Rule("ip", "198.51.100.9", "any"),
            Rule("ip", "198.51.100.10", "pstn-outbound"),
            Rule("ip", "198.51.100.11", "pstn-outbound"),
            Rule("cidr", "2001:db8::/64", "any"),
            Rule("cidr", "10.0.0.0/8", "any"),
            Rule("ip", "127.0.0.1", "any"),
        ]
    )
    assert acl.blocks(parse_address("203.0.113.15"))
    assert not acl.blocks(parse_address("203.0.113.16"))
    assert acl.blocks(parse_address("198.51.100.9"))
    assert acl.blocks(parse_address("::ffff:198.51.100.9"))
    assert acl.blocks(parse_address("198.51.100.10"))  # every scope applies (spec 8.2.2)
    assert not acl.blocks(parse_address("198.51.100.12"))
    assert acl.blocks(parse_address("2001:db8::5"))
    assert not acl.blocks(parse_address("10.9.9.9"))  # exempt beats a rule
    assert not acl.blocks(parse_address("127.0.0.1"))
    assert not Acl().blocks(parse_address("203.0.113.1"))  # no match allows


def test_the_packet_filter_gets_only_the_public_part_of_a_rule() -> None:
    acl = Acl([Rule("cidr", "10.0.0.0/7", "any"), Rule("cidr", "fc00::/6", "any"),
               Rule("cidr", "127.0.0.0/8", "any")])  # fmt: skip
    assert [str(n) for n in acl.v4] == ["11.0.0.0/8"]
    assert [str(n) for n in acl.v6] == [
        "fe00::/9",
        "fec0::/10",
        "ff00::/8",
    ]  # no fc00::/7, fe80::/10
    everything = public_part(ipaddress.ip_network("0.0.0.0/0"))
    assert ipaddress.ip_network("0.0.0.0/5") in everything
    assert not any(n.overlaps(ipaddress.ip_network("192.168.0.0/16")) for n in everything)


@pytest.mark.parametrize(
    ("subject", "value", "expected"),
    [("ip", " 203.0.113.7 ", "203.0.113.7"), ("ip", "::FFFF:203.0.113.7", "203.0.113.7"),
     ("cidr", "203.0.113.0/24", "203.0.113.0/24"), ("cidr", "2001:DB8::/32", "2001:db8::/32")],
)  # fmt: skip
def test_normalize(subject: str, value: str, expected: str) -> None:
    assert normalize(subject, value) == expected


@pytest.mark.parametrize(
    ("subject", "value"),
    [("ip", "203.0.113.0/24"), ("ip", "nope"), ("cidr", "203.0.113.1/24"), ("cidr", "x/8"),
     ("tenant", "acme"), ("number", "+4930123")],
)  # fmt: skip
def test_normalize_refuses(subject: str, value: str) -> None:
    with pytest.raises(ValueError, match=r"\w"):
        normalize(subject, value)


def test_tracker_blocks_on_the_sixth_failure_within_five_minutes() -> None:
    clock, tracker = ManualClock(), FailureTracker()
    address = parse_address("203.0.113.7")
    for _ in range(5):
        assert not tracker.record_failure(address, clock.now())
        clock.advance(59)
    assert not tracker.is_blocked(address, clock.now())
    assert tracker.record_failure(address, clock.now())  # 6th, 4 min 55 s after the first
    clock.advance(3599)
    assert tracker.is_blocked(address, clock.now())
    clock.advance(1)
    assert not tracker.is_blocked(address, clock.now())


def test_failures_of_a_blocked_address_neither_block_it_again_nor_extend_the_block() -> None:
    clock, tracker = ManualClock(), FailureTracker()
    address = parse_address("203.0.113.7")
    blocks = [tracker.record_failure(address, clock.now()) for _ in range(6)]
    assert blocks == [False] * 5 + [True]
    clock.advance(1800)
    assert not any(tracker.record_failure(address, clock.now()) for _ in range(6))
    clock.advance(1800)
    assert not tracker.is_blocked(address, clock.now())


def test_a_client_is_an_ipv4_address_or_an_ipv6_64() -> None:
    assert str(client_of(parse_address("203.0.113.7"))) == "203.0.113.7/32"
    assert str(client_of(parse_address("::ffff:203.0.113.7"))) == "203.0.113.7/32"
    assert str(client_of(parse_address("2001:db8:1:2:aaaa::1"))) == "2001:db8:1:2::/64"
    clock, tracker = ManualClock(), FailureTracker()
    for n in range(6):
        tracker.record_failure(parse_address(f"2001:db8:1:2::{n + 1}"), clock.now())
    assert tracker.is_blocked(parse_address("2001:db8:1:2:ffff::9"), clock.now())
    assert not tracker.is_blocked(parse_address("2001:db8:1:3::1"), clock.now())


def test_tracker_forgets_failures_older_than_the_window() -> None:
    clock, tracker = ManualClock(), FailureTracker()
    address = parse_address("203.0.113.7")
    for _ in range(6):
        assert not tracker.record_failure(address, clock.now())
        clock.advance(61)


def test_tracker_never_tracks_exempt_addresses() -> None:
    clock, tracker = ManualClock(), FailureTracker()
    for _ in range(50):
        assert not tracker.record_failure(parse_address("127.0.0.1"), clock.now())
        assert not tracker.record_failure(parse_address("192.168.0.5"), clock.now())
    assert tracker.tracked_count() == 0


def test_tracker_memory_is_bounded_and_evicts_the_stalest() -> None:
    clock, tracker = ManualClock(), FailureTracker(capacity=100)
    stale = parse_address("198.51.100.1")
    for _ in range(5):
        tracker.record_failure(stale, clock.now())
    for n in range(1000):  # a flood of distinct addresses
        clock.advance(0.01)
        tracker.record_failure(
            ipaddress.IPv4Address(0xCB007100 + n % 256 + (n // 256 << 8)), clock.now()
        )
    assert tracker.tracked_count() == 100
    # The stale address was evicted: its earlier failures no longer count.
    assert not tracker.record_failure(stale, clock.now())


def test_block_table_is_bounded_too() -> None:
    clock, tracker = ManualClock(), FailureTracker(capacity=10)
    for n in range(30):
        address = ipaddress.IPv4Address(0xC6336400 + n)
        for _ in range(6):
            tracker.record_failure(address, clock.now())
        clock.advance(1)
    assert tracker.blocked_count(clock.now()) == 10
    assert tracker.is_blocked(ipaddress.IPv4Address(0xC6336400 + 29), clock.now())
    assert not tracker.is_blocked(ipaddress.IPv4Address(0xC6336400), clock.now())


def test_turn_credentials_follow_the_rest_scheme() -> None:
    clock = ManualClock()
    username, password = turn_credentials(secret="s3cret", label="room-1", clock=clock, ttl=600)
    expiry = int(clock.now().timestamp()) + 600
    assert username == f"{expiry}:room-1"
    expected = hmac.new(b"s3cret", username.encode(), hashlib.sha1).digest()
    assert base64.b64decode(password) == expected
    servers = ice_servers(urls=["turns:relay.example:443"], secret="s3cret", label="r", clock=clock)
    assert servers[0]["urls"] == ["turns:relay.example:443"]
    with pytest.raises(ValueError, match="secret"):
        turn_credentials(secret="", label="r", clock=clock)
    with pytest.raises(ValueError, match="label"):
        turn_credentials(secret="s", label="a:b", clock=clock)


def test_stats_ticker_fires_every_thirty_seconds_of_the_clock() -> None:
    clock = ManualClock()
    ticker = StatsTicker(30, clock.now())
    clock.advance(29)
    assert not ticker.due(clock.now())
    clock.advance(1)
    assert ticker.due(clock.now())
    assert not ticker.due(clock.now())
    clock.advance(95)
    assert ticker.due(clock.now())
    assert not ticker.due(clock.now())


def test_stats_line_carries_every_counter() -> None:
    stats = RelayStats()
    stats.acl_blocked.update(udp=3, tcp=2, tls=1)
    stats.tls_accepted, stats.cert_reloads, stats.auto_blocks, stats.currently_blocked = 7, 1, 2, 2
    stats.handshake_failures.update(no_certificate=1, timeout=2, error=9)
    line = stats.line()
    for part in ("udp=3", "tcp=2", "tls=1", "total=6", "tls_accepted=7", "handshake_failures=12",
                 "no_certificate=1", "timeout=2", "error=9", "cert_reloads=1", "auto_blocks=2",
                 "currently_blocked=2"):  # fmt: skip
        assert part in line
