"""``--sip-allow``: the bridge takes SIP requests only from the listed networks and its trunks'
addresses; anyone else's are dropped unanswered, and their TCP connections closed as they open
(decision 0329). The module's bridge admits 192.0.2.0/24 besides its trunks, which listen on
127.0.0.1; 127.0.0.2 is another host of the loopback network."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiosipua import SipResponse
from click.testing import CliRunner

from switchboard.mediabridge.cli import serve
from switchboard.mediabridge.config import Trunk
from switchboard.mediabridge.sip.sources import Sources, SourcesError, allowed, parse_networks
from tests.mediabridge.conftest import BRIDGE_ONLY, TRUNKS, Bridge, write_trunks
from tests.mediabridge.rawsip import Caller, Udp

pytestmark = [pytest.mark.slow, BRIDGE_ONLY]

DID = "+4930188"
STRANGER = "127.0.0.2"


@pytest.fixture(scope="module")
def bridge_options() -> list[str]:
    return ["--sip-allow", "192.0.2.0/24"]


async def answered(caller: Caller) -> SipResponse:
    caller.cseq += 1
    caller.send(caller.wire("OPTIONS"))
    reply = await caller.reply()
    assert isinstance(reply, SipResponse)
    return reply


async def test_requests_from_elsewhere_are_dropped_unanswered(bridge: Bridge) -> None:
    trunk_side = Caller(await Udp.open(), bridge.process.sip_port, did=DID)
    stranger = Caller(await Udp.open(STRANGER), bridge.process.sip_port, did=DID)
    try:
        for method in ("OPTIONS", "INVITE", "BYE", "REGISTER"):
            stranger.send(stranger.wire(method))
        # The bridge reads its socket in order and answers an OPTIONS at once: when the trunk's
        # address has its 200, anything the stranger's requests drew would have come first.
        assert (await answered(trunk_side)).status_code == 200
        assert stranger.udp.received == 0
    finally:
        trunk_side.udp.close()
        stranger.udp.close()
    assert "Traceback" not in bridge.process.output()


async def test_tcp_from_elsewhere_is_closed_as_it_opens(bridge: Bridge) -> None:
    caller = Caller(await Udp.open(), bridge.process.sip_port, did=DID)
    caller.udp.close()
    options = caller.wire("OPTIONS").replace(b"SIP/2.0/UDP", b"SIP/2.0/TCP")

    async def first_byte(local: str) -> bytes:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", bridge.process.sip_port, local_addr=(local, 0)
        )
        try:
            writer.write(options)
            await writer.drain()
            return await asyncio.wait_for(reader.read(1), 10)
        except ConnectionResetError:
            return b""
        finally:
            writer.close()

    assert await first_byte(STRANGER) == b""  # closed, the OPTIONS unanswered
    assert await first_byte("127.0.0.1") == b"S"  # SIP/2.0 200 OK


def test_networks_admit_their_addresses_in_every_form() -> None:
    sources = Sources(parse_networks("203.0.113.0/24, 2001:db8::1"))
    assert sources.admits("203.0.113.9")
    assert sources.admits("::ffff:203.0.113.9")  # a dual-stack socket's form
    assert sources.admits("2001:db8::1")
    assert not sources.admits("203.0.114.1")
    assert not sources.admits("2001:db8::2")
    assert not sources.admits("not an address")


def test_trunks_are_admitted_and_names_resolved() -> None:
    trunks = [
        Trunk(id="a", uri="sip:198.51.100.7", host="198.51.100.7", port=5060),
        Trunk(id="b", uri="sip:localhost", host="localhost", port=5060),
    ]
    sources = allowed("192.0.2.0/24", trunks)
    assert sources is not None
    assert sources.admits("198.51.100.7")
    assert sources.admits("127.0.0.1")
    assert not sources.admits("198.51.100.8")
    assert allowed("", trunks) is None  # without the option, anyone
    unknown = [Trunk(id="c", uri="sip:nowhere.invalid", host="nowhere.invalid", port=5060)]
    with pytest.raises(SourcesError, match=r"trunks\.c: cannot resolve nowhere\.invalid"):
        allowed("192.0.2.0/24", unknown)


@pytest.mark.parametrize(
    ("value", "named"),
    [("10.1.2.3/8", "'10.1.2.3/8'"), ("203.0.113.0/24, carrier", "'carrier'"), (" , ", "no ")],
)
def test_serve_refuses_a_bad_list_at_start(tmp_path: Path, value: str, named: str) -> None:
    trunks = tmp_path / "trunks.toml"
    write_trunks(trunks, {trunk_id: 5070 + 2 * n for n, trunk_id in enumerate(TRUNKS)})
    result = CliRunner().invoke(
        serve,
        ["--trunks", str(trunks), "--sip-allow", value],
        env={"SWITCHBOARD_BRIDGE_SECRET": "s", "TEST_TRUNK_PASSWORD": "p"},
    )
    assert result.exit_code == 2, result.output
    assert "--sip-allow" in result.output
    assert named in result.output
