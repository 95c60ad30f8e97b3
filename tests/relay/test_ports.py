"""The relay's ports (decision 0709): its own listeners stay out of the relayed-media range, which
is coturn's alone, and `relay serve` refuses to start otherwise. The warning about other
services listening inside that range: test_serve.py."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from switchboard.cli import main


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        (
            {"SWITCHBOARD_RELAY_TURN_PORT": "50000"},
            "SWITCHBOARD_RELAY_TURN_PORT (50000) lies in the relayed-media range 49152-65535: "
            "keep the relay's own ports out of it",
        ),
        (
            {"SWITCHBOARD_RELAY_TLS_PORTS": "[5349, 50443]"},
            "SWITCHBOARD_RELAY_TLS_PORTS (50443) lies in the relayed-media range 49152-65535: "
            "keep the relay's own ports out of it",
        ),
        (
            {
                "SWITCHBOARD_RELAY_MIN_RELAY_PORT": "9000",
                "SWITCHBOARD_RELAY_MAX_RELAY_PORT": "9999",
            },
            "SWITCHBOARD_RELAY_METRICS_PORT (9641) lies in the relayed-media range 9000-9999: "
            "keep the relay's own ports out of it",
        ),
        (
            {
                "SWITCHBOARD_RELAY_MIN_RELAY_PORT": "60000",
                "SWITCHBOARD_RELAY_MAX_RELAY_PORT": "50000",
            },
            "SWITCHBOARD_RELAY_MIN_RELAY_PORT (60000) is above SWITCHBOARD_RELAY_MAX_RELAY_PORT "
            "(50000)",
        ),
    ],
)
def test_serve_refuses_its_own_ports_inside_the_relayed_media_range(
    variables: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """coturn may hand any port of that range to a peer, and the packet filter leaves the range
    open to peers (docs/relay.md): a port of the relay's own there would collide or be exposed."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(main, ["relay", "serve"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"error: {message}"
