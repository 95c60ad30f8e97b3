"""A browser (chromium through Playwright) gathers relay candidates with the credentials that
`ice_servers` hands a room page."""

from __future__ import annotations

import pytest
from playwright.async_api import async_playwright

from switchboard.kit.clock import SystemClock
from switchboard.relay.credentials import ice_servers
from switchboard.relay.server import RelayServer
from tests.relay.conftest import SECRET

pytestmark = pytest.mark.slow

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
        async with async_playwright() as p:
            browser = await p.chromium.launch(
                executable_path="/usr/bin/chromium", args=["--no-sandbox"]
            )
            try:
                page = await browser.new_page()
                config = {"iceServers": servers, "iceTransportPolicy": "relay"}
                result: list[str] = await page.evaluate(GATHER, config)
                return result
            finally:
                await browser.close()

    candidates = await gather(SECRET)
    assert candidates, "no relay candidate"
    assert all(f" {relayed_ip} " in c for c in candidates)
    assert await gather("not-the-secret") == []
