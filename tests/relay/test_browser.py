"""A browser (chromium through Playwright) gathers relay candidates with the credentials that
`ice_servers` hands a room page, and with those a room's signaling hands it in `welcome`."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from playwright.async_api import async_playwright

from switchboard.app import create_app
from switchboard.kit.clock import ManualClock, SystemClock
from switchboard.relay.credentials import ice_servers
from switchboard.relay.server import RelayServer
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories, ports
from tests.asgiserve import serving
from tests.browser import ARGS, CHROMIUM, needs_chromium
from tests.relay.conftest import SECRET

pytestmark = [pytest.mark.slow, needs_chromium]

GATHER = """async (config) => {
  const pc = new RTCPeerConnection(config);
  pc.createDataChannel("probe");
  const candidates = [];
  const done = new Promise((resolve) => {
    pc.onicecandidate = (e) => {
      if (e.candidate) candidates.push(e.candidate.candidate); else resolve();
    };
    setTimeout(resolve, 8000);
  });
  await pc.setLocalDescription(await pc.createOffer());
  await done;
  pc.close();
  return candidates.filter((c) => c.includes(" typ relay "));
}"""


# The room page's first step: join over the signaling socket and read `welcome`.
WELCOME = """async (url) => {
  const ws = new WebSocket(url);
  const welcome = await new Promise((resolve, reject) => {
    ws.onopen = () => ws.send(JSON.stringify({type: "join", name: "Ada", role: "human"}));
    ws.onmessage = (e) => { const m = JSON.parse(e.data); if (m.type === "welcome") resolve(m); };
    ws.onerror = () => reject(new Error("signaling failed"));
  });
  ws.close();
  return welcome;
}"""


async def _in_chromium(script: str, argument: Any) -> Any:
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = await browser.new_page()
            return await page.evaluate(script, argument)
        finally:
            await browser.close()


@pytest.fixture
def relay_database(sqlite_database: str) -> str:
    return sqlite_database


async def test_a_room_page_gets_relay_candidates(relay: RelayServer) -> None:
    turn = relay.settings.turn_port
    relayed_ip = relay.settings.relay_ips[0]

    async def gather(secret: str) -> list[str]:
        servers = ice_servers(
            urls=[f"turn:127.0.0.1:{turn}?transport=udp", f"turn:127.0.0.1:{turn}?transport=tcp"],
            secret=secret, label="room-1", clock=SystemClock(), ttl=600,
        )  # fmt: skip
        config = {"iceServers": servers, "iceTransportPolicy": "relay"}
        result: list[str] = await _in_chromium(GATHER, config)
        return result

    candidates = await gather(SECRET)
    assert candidates, "no relay candidate"
    assert all(f" {relayed_ip} " in c for c in candidates)
    assert await gather("not-the-secret") == []


async def test_a_room_welcome_hands_the_browser_working_relay_credentials(
    relay: RelayServer, settings: Settings
) -> None:
    """The platform signs the credentials with the relay's secret; coturn, checking them against
    the real time, relays for the browser that joined the room."""
    turn, port = relay.settings.turn_port, ports.free_port()
    live = settings.model_copy(update={
        "room_turn_urls": (f"turn:127.0.0.1:{turn}?transport=udp",), "room_turn_secret": SECRET,
    })  # fmt: skip
    runtime = Runtime(live, clock=ManualClock(dt.datetime.now(dt.UTC)))
    await factories.tenant(runtime, "acme", [f"127.0.0.1:{port}"])
    try:
        async with serving(create_app(runtime=runtime), port=port, ws="websockets-sansio"):
            welcome = await _in_chromium(WELCOME, f"ws://127.0.0.1:{port}/signal.ashx?room=x")
    finally:
        await runtime.db.dispose()
    [server] = welcome["iceServers"]
    assert server["urls"] == [f"turn:127.0.0.1:{turn}?transport=udp"]
    assert server["username"].endswith(f":{welcome['peerId']}")
    gathered = await _in_chromium(GATHER, {"iceServers": [server], "iceTransportPolicy": "relay"})
    assert gathered, "the room's credentials got no relay candidate"
    assert all(f" {relay.settings.relay_ips[0]} " in c for c in gathered)
