"""Seven room pages in Debian's chromium and a real bridge with its own Janus, at the tenant's
default threshold: six people meet in mesh, the seventh joins, and everyone moves to the SFU by
the spec's rule (reason ``auto-promote-join-human-count-7``), make-before-break, with media still
flowing on every page after the switch.

The fake camera plays a small generated clip (160x120 at 10 frames/s) so that seven pages with
six mesh connections each fit the machine's two cores.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from switchboard.runtime import Runtime
from tests import factories
from tests.console.conftest import ARGS, CHROMIUM, needs_chromium
from tests.mediabridge.components import BridgeProcess
from tests.rooms.conftest import Server
from tests.rooms.test_browser import INBOUND_BYTES, TRACK_PCS
from tests.rooms.test_cascade import named
from tests.rooms.test_sfu_janus import bridge, until_page
from tests.rooms.test_vnum_call import delivered
from tests.webhooks.conftest import Receiver, subscribe

__all__ = ["bridge"]

# Alone: beside a parallel suite on two cores the later subscriptions' DTLS handshakes with
# Janus stall after ICE connects (connectionState stays "connecting" for minutes) and the pages
# keep their mesh edges; on an idle machine the migration has completed in about 25 s, but
# runs right after the full suite stalled the same way, so it is not yet in CI.
pytestmark = [pytest.mark.slow, pytest.mark.alone, needs_chromium]
PEOPLE = ("Ann", "Bob", "Cem", "Dev", "Eli", "Fay", "Gus")
WIDTH, HEIGHT, FRAMES = 160, 120, 20


def small_clip(path: Path) -> Path:
    """A Y4M clip of moving bars: enough picture for the encoders, little work for them."""
    with path.open("wb") as out:
        out.write(f"YUV4MPEG2 W{WIDTH} H{HEIGHT} F10:1 Ip A1:1 C420jpeg\n".encode())
        for n in range(FRAMES):
            out.write(b"FRAME\n")
            row = bytes((x * 4 + n * 12) % 256 for x in range(WIDTH))
            out.write(row * HEIGHT)
            out.write(bytes([128]) * (WIDTH * HEIGHT // 2))  # U and V planes: grey
    return path


async def join(browser: Any, host: str, name: str) -> Any:
    page = await browser.new_page()
    await page.add_init_script(TRACK_PCS)
    await page.goto(f"http://{host}/rooms/x")
    await page.fill("#name", name)
    await page.click("text=Join with camera and microphone")
    await page.wait_for_selector("#status:has-text('joined')", timeout=20_000)
    return page


async def inbound_rises(pages: list[Any]) -> None:
    before = [await page.evaluate(INBOUND_BYTES) for page in pages]
    async with asyncio.timeout(40):
        while True:
            now = [await page.evaluate(INBOUND_BYTES) for page in pages]
            if all(b > a for a, b in zip(before, now, strict=True)):
                return
            await asyncio.sleep(0.5)


async def test_the_seventh_page_moves_everyone_to_janus(
    server: Server, bridge: BridgeProcess, runtime: Runtime, receiver: Receiver, tmp_path: Path
) -> None:
    from playwright.async_api import async_playwright, expect

    host = f"127.0.0.1:{server.port}"  # a loopback origin is a secure context (getUserMedia)
    meet = await factories.tenant(runtime, "meet", [host])  # AutoPromoteHumanCount: default 6
    await subscribe(runtime, meet, receiver.url("/hook"))
    runtime.settings = runtime.settings.model_copy(  # a browser's SDP is larger
        update={
            "room_max_message_bytes": 64 * 1024,
            "room_max_messages_per_second": 200,
            "room_max_peers": 50,
        }
    )
    clip = small_clip(tmp_path / "clip.y4m")
    media = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
             f"--use-file-for-fake-video-capture={clip}"]  # fmt: skip
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS + media)
        try:
            pages = [await join(browser, host, name) for name in PEOPLE[:6]]
            for page in pages:
                assert await page.text_content("#mode") == "mesh"
            await until_page(pages[0], "open", 5)  # six people: five mesh edges each
            await inbound_rises(pages)

            pages.append(await join(browser, host, PEOPLE[6]))  # the seventh human
            for page in pages:
                await expect(page.locator("#mode")).to_have_text("sfu", timeout=30_000)
            for page in pages:  # mesh edges closed: a publisher and six subscriptions
                await until_page(page, "open", 7, within=120)
                await expect(page.locator("#tiles video")).to_have_count(7, timeout=20_000)
            await inbound_rises(pages)  # media keeps flowing, now through Janus

            events = await delivered(runtime, receiver, "room.cascade.promoted")
            (promoted,) = named(events, "room.cascade.promoted")
            assert (promoted["room"], promoted["mode"], promoted["reason"]) == (
                "x", "sfu", "auto-promote-join-human-count-7",
            )  # fmt: skip
            assert promoted["humanCount"] == 7
            joined = named(events, "room.peer.joined")
            assert sorted(e["peerCount"] for e in joined) == [1, 2, 3, 4, 5, 6, 7]
        finally:
            await browser.close()
