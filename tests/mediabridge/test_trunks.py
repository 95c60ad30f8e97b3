"""The trunks file: read as the issue shows it, refused at start naming the key at fault."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from switchboard.cli import main
from switchboard.mediabridge.config import Trunk, TrunksError, load_trunks

GOOD = """
[trunks.carrier-a]
uri = "sip:127.0.0.1:5070"   # where INVITEs go
transport = "udp"            # udp or tcp
username = "acct"            # optional digest auth (401/407)
password_env = "CARRIER_A_PASSWORD"
from_domain = "pbx.example.net"
ring_timeout_sec = 30

[trunks.carrier-b]
uri = "sip:sbc.example.net"
transport = "tcp"

[trunks.carrier-c]
uri = "sip:registrar.example.net"
username = "acct-c"
password_env = "CARRIER_A_PASSWORD"
register = true
register_expires = 600
options_ping_sec = 30
"""


def test_the_file_of_the_issue_reads(tmp_path: Path) -> None:
    path = tmp_path / "trunks.toml"
    path.write_text(GOOD)
    trunks = load_trunks(path, {"CARRIER_A_PASSWORD": "pw"})
    assert trunks["carrier-a"] == Trunk(
        id="carrier-a", uri="sip:127.0.0.1:5070", host="127.0.0.1", port=5070, transport="udp",
        username="acct", password="pw", from_domain="pbx.example.net", ring_timeout_sec=30.0,
    )  # fmt: skip
    b = trunks["carrier-b"]
    assert (b.host, b.port, b.transport, b.from_domain) == (
        "sbc.example.net", 5060, "tcp", "sbc.example.net"
    )  # fmt: skip
    assert "pw" not in repr(trunks["carrier-a"])
    assert (trunks["carrier-a"].register, trunks["carrier-a"].register_expires) == (False, 3600)
    assert (trunks["carrier-c"].register, trunks["carrier-c"].register_expires) == (True, 600)
    assert (trunks["carrier-a"].options_ping_sec, trunks["carrier-c"].options_ping_sec) == (0, 30)


@pytest.mark.parametrize(
    ("text", "env", "names"),
    [
        ("[trunks.a]\nuri = 5\n", {}, "trunks.a.uri"),
        ("[trunks.a]\n", {}, "trunks.a.uri"),
        ('[trunks.a]\nuri = "tel:+1555"\n', {}, "trunks.a.uri"),
        ('[trunks.a]\nuri = "sip:h"\ntransport = "tls"\n', {}, "trunks.a.transport"),
        ('[trunks.a]\nuri = "sip:h"\nring_timeout_sec = 0\n', {}, "trunks.a.ring_timeout_sec"),
        ('[trunks.a]\nuri = "sip:h"\nring_timeout_sec = "30"\n', {}, "trunks.a.ring_timeout_sec"),
        ('[trunks.a]\nuri = "sip:h"\nusername = "u"\n', {}, "trunks.a.password_env"),
        ('[trunks.a]\nuri = "sip:h"\npassword_env = "NOPE"\n', {}, "trunks.a.password_env"),
        ('[trunks.a]\nuri = "sip:h"\nport = 5060\n', {}, "trunks.a.port"),
        ('[trunks.a]\nuri = "sip:h"\nregister = "yes"\n', {}, "trunks.a.register: must be"),
        ('[trunks.a]\nuri = "sip:h"\nregister = true\n', {}, "trunks.a.register: needs username"),
        (
            '[trunks.a]\nuri = "sip:h"\nusername = "u"\npassword_env = "P"\nregister = true\n'
            "register_expires = 30\n",
            {"P": "p"},
            "trunks.a.register_expires",
        ),
        ('[trunks.a]\nuri = "sip:h"\nregister_expires = 60.5\n', {}, "trunks.a.register_expires"),
        ('[trunks.a]\nuri = "sip:h"\noptions_ping_sec = 3\n', {}, "trunks.a.options_ping_sec"),
        ('[trunks.a]\nuri = "sip:h"\noptions_ping_sec = true\n', {}, "trunks.a.options_ping_sec"),
        ('[trunks.a]\nuri = "sip:h"\noptions_ping_sec = "30"\n', {}, "0 or whole seconds"),
        ('[trunk.a]\nuri = "sip:h"\n', {}, "'trunk'"),
        ("", {}, "'trunks'"),
        ("[trunks.a\n", {}, "not valid TOML"),
    ],
)
def test_a_bad_file_names_the_key(
    tmp_path: Path, text: str, env: dict[str, str], names: str
) -> None:
    path = tmp_path / "trunks.toml"
    path.write_text(text)
    with pytest.raises(TrunksError) as caught:
        load_trunks(path, env)
    assert names in str(caught.value)
    assert str(path) in str(caught.value)


def test_serve_refuses_a_bad_file_at_start(tmp_path: Path) -> None:
    path = tmp_path / "trunks.toml"
    path.write_text('[trunks.a]\nuri = "sip:h"\ntransport = "sctp"\n')
    result = CliRunner().invoke(
        main, ["bridge", "serve", "--trunks", str(path)],
        env={"SWITCHBOARD_BRIDGE_SECRET": "s"},
    )  # fmt: skip
    assert result.exit_code == 1
    assert "trunks.a.transport" in result.output


def test_serve_needs_the_secret_and_a_known_engine(tmp_path: Path) -> None:
    path = tmp_path / "trunks.toml"
    path.write_text('[trunks.a]\nuri = "sip:h"\n')
    runner = CliRunner()
    no_secret = runner.invoke(
        main, ["bridge", "serve", "--trunks", str(path)], env={"SWITCHBOARD_BRIDGE_SECRET": ""}
    )
    assert no_secret.exit_code == 2
    assert "SWITCHBOARD_BRIDGE_SECRET" in no_secret.output
    unknown = runner.invoke(
        main, ["bridge", "serve", "--trunks", str(path), "--engine", "nope"],
        env={"SWITCHBOARD_BRIDGE_SECRET": "s"},
    )  # fmt: skip
    assert unknown.exit_code == 2
    assert "'nope' is not one of 'offline', 'gemini', 'tone'" in unknown.output
    bad_range = runner.invoke(
        main, ["bridge", "serve", "--trunks", str(path), "--rtp-ports", "9-5"],
        env={"SWITCHBOARD_BRIDGE_SECRET": "s"},
    )  # fmt: skip
    assert bad_range.exit_code == 2
    assert "--rtp-ports" in bad_range.output


@pytest.mark.parametrize(
    ("table", "args", "names"),
    [
        ('[sfu]\njanus = "somewhere"\n', [], "sfu.janus"),
        ('[sfu]\njanus = "local"\nrtp_ports = "5-1"\n', [], "sfu.rtp_ports"),
        ('[sfu]\nports = "1"\n', [], "sfu.ports: unknown key"),
        ('[sfu]\njanus = "local"\nice_lite = "yes"\n', [], "sfu.ice_lite"),
        ('[sfu]\njanus = "http://j/janus"\nadmin_secret_env = "NOPE_UNSET"\n', [],
         "sfu.admin_secret_env"),
        ("", ["--sfu", "nowhere"], "sfu.janus"),
        ("", ["--sfu", "local", "--sfu-rtp-ports", "x"], "sfu.rtp_ports"),
    ],
)  # fmt: skip
def test_serve_refuses_a_bad_sfu_table_or_option(
    tmp_path: Path, table: str, args: list[str], names: str
) -> None:
    path = tmp_path / "trunks.toml"
    path.write_text(f'[trunks.a]\nuri = "sip:h"\n\n{table}')
    result = CliRunner().invoke(
        main, ["bridge", "serve", "--trunks", str(path), *args],
        env={"SWITCHBOARD_BRIDGE_SECRET": "s"},
    )  # fmt: skip
    assert result.exit_code == 1
    assert names in result.output
    assert str(path) in result.output
