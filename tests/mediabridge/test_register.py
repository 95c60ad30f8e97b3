"""Registration at a trunk's registrar (decision 0331): a bridge process whose trunks file asks
for it registers at two sipp registrars. One wants a longer interval (423), challenges (401),
binds for 2 s and then for an hour after the refresh, and sees the binding removed when the
bridge stops (its scenario checks each REGISTER); the other refuses (403), which the health
check shows. Nothing of the platform is involved."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiosipua import SipMessage, SipRequest, SipResponse

from switchboard.mediabridge.config import Trunk
from switchboard.mediabridge.sip.endpoint import SipEndpoint
from switchboard.mediabridge.sip.register import Registration
from tests.mediabridge.components import BridgeProcess, Sipp, free_port
from tests.mediabridge.rawsip import Udp

pytestmark = pytest.mark.slow

PASSWORD = "registrar secret 7"


async def health_until(
    bridge: BridgeProcess, done: Callable[[dict[str, Any]], bool], within: float = 30.0
) -> dict[str, Any]:
    """The bridge's registrations once ``done`` holds of them (bounded; not a timing)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    async with httpx.AsyncClient(base_url=bridge.url, timeout=30) as http:
        while True:
            registrations: dict[str, Any] = (await http.get("/v1/health")).json()["registrations"]
            if done(registrations):
                return registrations
            assert loop.time() < deadline, registrations
            await asyncio.sleep(0.1)


async def test_the_bridge_registers_refreshes_and_unregisters(tmp_path: Path) -> None:
    registrar_port, refusing_port = free_port(), free_port()
    keys = {"username": "acct", "password": PASSWORD}
    registrar = await Sipp("uas_registrar.xml", registrar_port).start(
        tmp_path, keys=keys, timeout_sec=60
    )
    refusing = await Sipp("uas_registrar_refuses.xml", refusing_port).start(tmp_path)
    trunks = tmp_path / "trunks.toml"
    trunks.write_text(
        f'[trunks.carrier]\nuri = "sip:127.0.0.1:{registrar_port}"\nusername = "acct"\n'
        'password_env = "TEST_REGISTER_PASSWORD"\nfrom_domain = "carrier.test"\n'
        "register = true\nregister_expires = 300\n\n"
        f'[trunks.refusing]\nuri = "sip:127.0.0.1:{refusing_port}"\nusername = "acct"\n'
        'password_env = "TEST_REGISTER_PASSWORD"\nregister = true\n\n'
        f'[trunks.plain]\nuri = "sip:127.0.0.1:{free_port()}"\n'
    )
    bridge = BridgeProcess(trunks=trunks, env={"TEST_REGISTER_PASSWORD": PASSWORD})
    await asyncio.to_thread(bridge.start, tmp_path)
    try:
        registrations = await health_until(
            bridge,
            lambda r: r["carrier"]["expiresInSec"] > 600 and r["refusing"]["state"] == "failed",
        )
        # refreshed: the binding of an hour that only the second 200 grants
        assert registrations["carrier"]["state"] == "registered"
        assert registrations["carrier"]["failure"] == ""
        assert registrations["refusing"]["failure"] == "403 Forbidden"
        assert "plain" not in registrations  # a trunk that does not ask for it
        assert bridge.process is not None
        bridge.process.send_signal(signal.SIGTERM)  # stopping removes the binding
        assert await asyncio.to_thread(bridge.process.wait, 30) == 0
        assert await registrar.exit_code() == 0
        assert await refusing.exit_code() == 0
    finally:
        bridge.kill()
        await registrar.stop()
        await refusing.stop()
    output = bridge.output()
    assert "trunk carrier: registered for 2 s" in output
    assert "trunk carrier: registration removed" in output
    assert "trunk refusing: registration failed (403 Forbidden)" in output
    assert PASSWORD not in output


async def test_a_refused_registration_is_tried_again_later_and_later() -> None:
    """``Retry-After`` when the registrar gives one, else a backoff doubling from 30 s; once
    bound, a refresh 30 s before the grant ends. The waits are recorded, not slept."""
    endpoint = SipEndpoint("127.0.0.1", free_port(), t1=0.05)  # UDP and TCP alike
    await endpoint.start()
    registrar = await Udp.open()
    trunk = Trunk(
        id="carrier", uri=f"sip:127.0.0.1:{registrar.port}", host="127.0.0.1",
        port=registrar.port, username="acct", password=PASSWORD, from_domain="carrier.test",
        register=True, register_expires=300,
    )  # fmt: skip
    waits: list[float] = []
    waited = asyncio.Event()

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        waited.set()
        await asyncio.sleep(0)

    registration = Registration(endpoint, trunk, sleep=sleep)
    running = asyncio.ensure_future(registration.run())
    try:
        answers = [(503, {"Retry-After": "120"}), (500, {}), (500, {}), (200, {"Expires": "100"})]
        for status, headers in answers:
            request = SipMessage.parse(await registrar.next())
            assert isinstance(request, SipRequest)
            assert request.method == "REGISTER"
            assert request.headers.get_first("expires") == "300"
            registrar.send(reply(request, status, headers), endpoint.port)
            waited.clear()
            await asyncio.wait_for(waited.wait(), 10)
        assert waits == [120, 60, 120, 70]
        assert registration.status()["state"] == "registered"
        assert registration.status()["expiresInSec"] in (99, 100)
    finally:
        running.cancel()
        registrar.close()
        await endpoint.stop()


def reply(request: SipRequest, status: int, headers: dict[str, str]) -> bytes:
    answer = SipResponse(status_code=status, reason_phrase="Whatever")
    for name in ("via", "from", "to", "call-id", "cseq"):
        for value in request.headers.get(name):
            answer.headers.append(name, value)
    for name, value in headers.items():
        answer.headers.set_single(name, value)
    return bytes(answer)
