"""The operator's denied peers (decision 0707): how SWITCHBOARD_RELAY_DENIED_PEERS is read, what
coturn's configuration gets from it, and a relay that refuses to start on a bad value. Peers
refused through a real coturn: test_relay_peers.py."""

from __future__ import annotations

import ipaddress

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from switchboard.cli import main
from switchboard.relay.coturn import DENIED_PEERS, render_config
from switchboard.relay.settings import RelaySettings

VARIABLE = "SWITCHBOARD_RELAY_DENIED_PEERS"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ()),
        ("203.0.113.0/24", ("203.0.113.0/24",)),
        (" 203.0.113.0/24, 2001:DB8:5::/48 ,192.0.2.9,",
         ("203.0.113.0/24", "2001:db8:5::/48", "192.0.2.9/32")),
        ('["203.0.113.0/24", "2001:db8:5::/48"]', ("203.0.113.0/24", "2001:db8:5::/48")),
    ],
)  # fmt: skip
def test_denied_peers_are_comma_separated_or_a_json_list(
    value: str, expected: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, value)
    assert RelaySettings().denied_peers == expected


def test_each_range_is_denied_after_the_built_in_ones_with_its_ipv6_forms() -> None:
    settings = RelaySettings(denied_peers=("198.51.100.0/24", "2001:db8:5::/48"))
    lines = [line for line in render_config(settings).splitlines() if "denied-peer-ip" in line]
    assert lines[len(DENIED_PEERS) :] == [
        "denied-peer-ip=198.51.100.0-198.51.100.255",
        "denied-peer-ip=::ffff:c633:6400-::ffff:c633:64ff",  # ::ffff:198.51.100.0/120
        "denied-peer-ip=64:ff9b::c633:6400-64:ff9b::c633:64ff",  # NAT64, 64:ff9b::198.51.100.0/120
        "denied-peer-ip=2001:db8:5::-2001:db8:5:ffff:ffff:ffff:ffff:ffff",
    ]
    assert len(lines) == len(DENIED_PEERS) + 4
    # Without the setting, the built-in ones only.
    assert len([line for line in render_config(RelaySettings()).splitlines()
                if "denied-peer-ip" in line]) == len(DENIED_PEERS)  # fmt: skip


def test_the_built_in_ipv4_ranges_carry_their_ipv6_forms_from_the_same_function() -> None:
    assert ipaddress.ip_network("::ffff:a9fe:0/112") in DENIED_PEERS  # ::ffff:169.254.0.0/112
    assert ipaddress.ip_network("64:ff9b::a9fe:0/112") in DENIED_PEERS  # 64:ff9b::169.254.0.0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "203.0.113.7/24",
            "invalid network '203.0.113.7/24': host bits set; did you mean 203.0.113.0/24?",
        ),
        (
            "203.0.113.0/24, nonsense",
            "invalid network 'nonsense': 'nonsense' does not appear to be an IPv4 or IPv6 network",
        ),
        (
            "2001:db8::/129",
            "invalid network '2001:db8::/129': '2001:db8::/129' does not appear"
            " to be an IPv4 or IPv6 network",
        ),
        ("198.51.100.0/24", "198.51.100.0/24 holds the relay's own address 198.51.100.10"),
    ],
)
def test_serve_refuses_a_bad_range_in_one_line_naming_the_variable(
    value: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before anything starts (no coturn, no packet filter): the variable, the value, the rule.
    A range holding the relay's own relayed address would refuse the calls between two peers
    that both use the relay."""
    monkeypatch.setenv(VARIABLE, value)
    monkeypatch.setenv("SWITCHBOARD_RELAY_RELAY_IPS", '["198.51.100.10"]')
    result = CliRunner().invoke(main, ["relay", "serve"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"error: {VARIABLE}: Value error, {message}"


def test_a_range_holding_the_external_address_is_refused_too() -> None:
    """coturn's ``public/private`` form of external-ip: its public address is the relayed one."""
    with pytest.raises(ValidationError, match=r"holds the relay's own address 198\.51\.100\.10"):
        RelaySettings(external_ip="198.51.100.10/10.0.0.5", denied_peers=("198.51.100.0/24",))
    settings = RelaySettings(external_ip="198.51.100.10/10.0.0.5", denied_peers=("10.0.0.0/8",))
    assert settings.denied_peers == ("10.0.0.0/8",)
