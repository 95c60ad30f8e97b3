"""The platform and a real bridge with its own Janus, together: aiortc peers meet in mesh over
the signaling socket, the join-time promote moves them to the SFU make-before-break, media keeps
flowing through Janus, and the cascade and proxy events reach a real webhook receiver."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from switchboard.mediabridge.rooms.process import JANUS
from switchboard.platform.rooms.simpeer import RoomPeer
from switchboard.runtime import Runtime
from tests import factories
from tests.browser import ARGS, CHROMIUM, needs_chromium
from tests.mediabridge.components import SECRET, BridgeProcess, free_port
from tests.rooms.conftest import Server
from tests.rooms.peers import describe, three_peers_move_to_the_sfu, until
from tests.rooms.test_browser import INBOUND_BYTES, MEDIA_ARGS, TRACK_PCS
from tests.rooms.test_cascade import set_sfu

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which(JANUS) is None, reason="janus is not installed"),
]


@pytest.fixture
async def bridge(server: Server, runtime: Runtime, tmp_path: Path) -> AsyncIterator[BridgeProcess]:
    """``switchboard bridge serve`` running its own Janus, posting to the test's platform."""
    # Janus takes a port per peer connection and interface: seven people in a room are 49
    # connections. Each pytest worker gets its own thousand, below the ephemeral ports.
    lo = 21000 + (os.getpid() % 10) * 1000
    trunks = tmp_path / "bridge.toml"
    trunks.write_text(f'[trunks.none]\nuri = "sip:127.0.0.1:{free_port()}"\n\n'
                      f'[sfu]\njanus = "local"\nrtp_ports = "{lo}-{lo + 999}"\n')  # fmt: skip
    process = BridgeProcess(trunks=trunks)
    await asyncio.to_thread(process.start, tmp_path, platform_url=f"http://127.0.0.1:{server.port}")
    runtime.settings = runtime.settings.model_copy(
        update={"bridge_url": process.url, "bridge_secret": SECRET}
    )
    yield process
    assert process.process is not None
    process.process.terminate()  # a clean stop stops its Janus too
    await asyncio.to_thread(process.process.wait, 15)


# Media through an SFU decoded by aiortc in this process: on a loaded two-worker run the
# decoders starve and frames stop rising in time, so these take the machine to themselves.
@pytest.mark.alone
async def test_three_peers_move_to_janus_with_media_flowing(
    server: Server, bridge: BridgeProcess, acme: factories.TenantFixture, hooks: Any,
    runtime: Runtime,
) -> None:  # fmt: skip
    await three_peers_move_to_the_sfu(server, acme, hooks, runtime)


@pytest.mark.alone
@needs_chromium
async def test_the_room_page_moves_to_janus_with_two_aiortc_peers(
    server: Server, bridge: BridgeProcess, runtime: Runtime
) -> None:
    from playwright.async_api import async_playwright, expect

    host = f"127.0.0.1:{server.port}"  # a loopback origin is a secure context (getUserMedia)
    meet = await factories.tenant(runtime, "meet", [host])
    await set_sfu(runtime, meet, AutoPromoteHumanCount="2")
    runtime.settings = runtime.settings.model_copy(  # a browser's SDP is larger
        update={"room_max_message_bytes": 64 * 1024, "room_max_messages_per_second": 200}
    )
    peers: list[RoomPeer] = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS + MEDIA_ARGS)
        try:
            for name in ("A", "B"):
                peers.append(RoomPeer(await server.peer(host, "x"), name))
                await peers[-1].join()
            page = await browser.new_page()
            await page.add_init_script(TRACK_PCS)
            await page.goto(f"http://{host}/rooms/x")
            await page.fill("#name", "Ann")
            await page.click("text=Join with camera and microphone")  # the third human
            await expect(page.locator("#mode")).to_have_text("sfu", timeout=10_000)
            await until(lambda: all(
                p.mode == "sfu" and not p.mesh and len(p.subscribers) == 2
                and all(pc.connectionState == "connected" for pc in p.subscribers.values())
                # the mesh edge's "closed" state arrives once its close has finished
                and len(set(p.mesh_closed)) == 2
                for p in peers
            ), 30, lambda: describe(peers))  # fmt: skip
            # the page closed its mesh edges; it now holds its publisher and two subscriptions
            await until_page(page, "open", 3)
            ann = next(o for o in peers[0].subscribers if o != peers[1].peer_id)
            frames = [p.frames.get(ann, 0) for p in peers]
            before = await page.evaluate(INBOUND_BYTES)
            pairs = list(zip(peers, frames, strict=True))
            await until(lambda: all(p.frames.get(ann, 0) > f + 3 for p, f in pairs))
            async with asyncio.timeout(20):
                while await page.evaluate(INBOUND_BYTES) <= before:  # noqa: ASYNC110 (polled)
                    await asyncio.sleep(0.2)
            await expect(page.locator("#tiles video")).to_have_count(3)
            assert (await page.text_content("#status")) == "joined"
        finally:
            for peer in peers:
                await peer.close()
            await browser.close()


OPEN_PCS = """(state) => (window.__pcs || []).filter((pc) => state === "open"
  ? pc.connectionState !== "closed" : pc.connectionState === state).length"""


async def until_page(page: Any, state: str, count: int, *, within: float = 20) -> None:
    async with asyncio.timeout(within):
        while await page.evaluate(OPEN_PCS, state) != count:  # noqa: ASYNC110 (polled)
            await asyncio.sleep(0.2)
