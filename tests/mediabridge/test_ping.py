"""Trunk health by OPTIONS (decision 0332): a trunk that stops answering is down, shown by the
health check, and a dial that names it tries it last; it is up again once it answers. The
module brings its own bridge process: a trunk that never answers, pinged every 5 s, and a sipp
trunk that answers calls."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiosipua import SipMessage, SipRequest

from switchboard.mediabridge.config import Trunk
from switchboard.mediabridge.sip.endpoint import SipEndpoint
from switchboard.mediabridge.sip.ping import TrunkPing
from tests.mediabridge.components import BridgeProcess, SilentTrunk, Sipp, free_port
from tests.mediabridge.conftest import BRIDGE_ONLY, Bridge, Platform
from tests.mediabridge.rawsip import Udp
from tests.mediabridge.test_register import reply

pytestmark = [pytest.mark.slow, BRIDGE_ONLY]


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory, platform_port: int) -> Iterator[Bridge]:
    workdir = tmp_path_factory.mktemp("bridge")
    ports = {"gone": free_port(), "echo": free_port()}
    trunks = workdir / "trunks.toml"
    trunks.write_text(
        f'[trunks.gone]\nuri = "sip:127.0.0.1:{ports["gone"]}"\noptions_ping_sec = 5\n\n'
        f'[trunks.echo]\nuri = "sip:127.0.0.1:{ports["echo"]}"\n'
    )
    process = BridgeProcess(trunks=trunks)
    process.start(workdir, platform_url=f"http://127.0.0.1:{platform_port}")
    try:
        yield Bridge(process=process, ports=ports, workdir=workdir)
    finally:
        process.kill()


@pytest.fixture
async def gone(bridge: Bridge) -> AsyncIterator[SilentTrunk]:
    """The trunk's port, listened at by something that never answers."""
    async with SilentTrunk.on(bridge.ports["gone"]) as trunk:
        yield trunk


async def trunks_until(bridge: Bridge, state: str, within: float = 30.0) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    async with httpx.AsyncClient(base_url=bridge.process.url, timeout=30) as http:
        while True:
            trunks: dict[str, Any] = (await http.get("/v1/health")).json()["trunks"]
            if trunks["gone"]["state"] == state:
                return trunks
            assert loop.time() < deadline, trunks
            await asyncio.sleep(0.1)


async def test_a_trunk_that_does_not_answer_options_is_tried_last(
    bridge: Bridge, platform: Platform, gone: SilentTrunk, tmp_path: Path
) -> None:
    trunks = await trunks_until(bridge, "down")
    assert trunks["gone"]["failure"] == "no answer to OPTIONS"
    assert "echo" not in trunks  # not pinged: never counted down
    echo = await Sipp("uas_echo.xml", bridge.ports["echo"]).start(
        tmp_path, keys={"codec": "0"}, echo=True
    )
    try:
        await platform.route("+14155550141", ["gone", "echo"])
        record = await platform.ended(await platform.place("+14155550141"), within=45)
        assert await echo.exit_code() == 0
    finally:
        await echo.stop()
    assert (record["status"], record["endedReason"], record["trunkId"]) == (
        "ended-success", "finished", "echo"
    )  # fmt: skip
    # the dial named it first, yet it got no INVITE: only the OPTIONS that found it gone
    assert gone.invites == 0
    assert any(data.startswith(b"OPTIONS sip:127.0.0.1:") for data in gone.received)
    assert "trunk gone: down (no answer to OPTIONS)" in bridge.process.output()
    assert "trunk gone down, tried last" in bridge.process.output()


async def test_a_trunk_is_down_while_it_refuses_and_up_once_it_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Any answer below 500 is a trunk that is there (a 404 or a 405 to OPTIONS included); a
    5xx is one that is not. The waits are recorded, not slept."""
    endpoint = SipEndpoint("127.0.0.1", free_port(), t1=0.05)  # UDP and TCP alike
    await endpoint.start()
    far = await Udp.open()
    trunk = Trunk(
        id="carrier", uri=f"sip:127.0.0.1:{far.port}", host="127.0.0.1", port=far.port,
        from_domain="pbx.test", options_ping_sec=30,
    )  # fmt: skip
    waits: list[float] = []
    states: list[str] = []
    waited = asyncio.Event()

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        states.append(str(ping.status()["state"]))
        waited.set()
        await asyncio.sleep(0)

    ping = TrunkPing(endpoint, trunk, sleep=sleep)
    assert ping.status()["state"] == "unknown"
    caplog.set_level(logging.INFO, logger="switchboard.mediabridge.sip")
    running = asyncio.ensure_future(ping.run())
    try:
        for status in (405, 503, 200):
            request = SipMessage.parse(await far.next())
            assert isinstance(request, SipRequest)
            assert request.method == "OPTIONS"
            far.send(reply(request, status, {}), endpoint.port)
            waited.clear()
            await asyncio.wait_for(waited.wait(), 10)
        assert states == ["up", "down", "up"]
        assert waits == [30, 30, 30]
    finally:
        running.cancel()
        far.close()
        await endpoint.stop()
    assert "trunk carrier: down (503 Whatever)" in caplog.text
    assert "trunk carrier: up again" in caplog.text
