"""The room page in Debian's chromium (fake camera and microphone): two pages meet in mesh."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from switchboard.runtime import Runtime
from tests import factories
from tests.browser import ARGS, CHROMIUM, needs_chromium
from tests.rooms.conftest import Server
from tests.rooms.test_cascade import join, named, set_sfu

pytestmark = [pytest.mark.slow, needs_chromium]

MEDIA_ARGS = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]

INBOUND_BYTES = """async () => {
  const all = window.__pcs || [];
  let total = 0;
  for (const pc of all) {
    (await pc.getStats()).forEach((s) => {
      if (s.type === "inbound-rtp") total += s.bytesReceived;
    });
  }
  return total;
}"""

# Keeps a handle on every RTCPeerConnection the page makes, for getStats from the test.
TRACK_PCS = """(() => {
  const Native = window.RTCPeerConnection;
  window.__pcs = [];
  window.RTCPeerConnection = function (...args) {
    const pc = new Native(...args);
    window.__pcs.push(pc);
    return pc;
  };
  window.RTCPeerConnection.prototype = Native.prototype;
})();"""


async def test_two_pages_see_each_other_in_mesh(server: Server, runtime: Runtime) -> None:
    from playwright.async_api import async_playwright, expect

    host = f"127.0.0.1:{server.port}"  # a loopback origin is a secure context (getUserMedia)
    await factories.tenant(runtime, "meet", [host])
    runtime.settings = runtime.settings.model_copy(  # real SDP; the suite's limit is tiny
        update={"room_max_message_bytes": 64 * 1024, "room_max_messages_per_second": 200}
    )
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS + MEDIA_ARGS)
        pages: list[Any] = []
        for name in ("Ann", "Bob"):
            page = await browser.new_page()
            await page.add_init_script(TRACK_PCS)
            response = await page.goto(f"http://{host}/rooms/x")
            assert response is not None
            assert "script-src 'self'" in response.headers["content-security-policy"]
            await page.fill("#name", name)
            await page.click("text=Join with camera and microphone")
            await page.wait_for_selector("#status:has-text('joined')")
            pages.append(page)
        for page in pages:
            assert await page.text_content("#mode") == "mesh"
            await expect(page.locator("#tiles video")).to_have_count(2)
        before = [await page.evaluate(INBOUND_BYTES) for page in pages]
        async with asyncio.timeout(20):
            while True:
                now = [await page.evaluate(INBOUND_BYTES) for page in pages]
                if all(b > a for a, b in zip(before, now, strict=True)):
                    break  # media flows both ways: inbound RTP bytes rise on each page
                await asyncio.sleep(0.5)
        captions = await pages[0].locator("figcaption").all_text_contents()
        assert sorted(captions) == ["Ann (you)", "Bob"]
        await pages[1].click("#leave")
        await expect(pages[0].locator("#tiles video")).to_have_count(1)
        # The page that left is back at its join form, its tiles and controls gone.
        await expect(pages[1].locator("#status")).to_have_text("You left the room.")
        await expect(pages[1].locator("#tiles video")).to_have_count(0)
        await expect(pages[1].locator("#controls")).to_be_hidden()
        await expect(pages[1].locator("#join")).to_be_visible()
        # ... and may join again.
        await pages[1].click("text=Join with camera and microphone")
        await pages[1].wait_for_selector("#status:has-text('joined')")
        await expect(pages[0].locator("#tiles video")).to_have_count(2)
        await browser.close()


async def test_joining_a_room_on_the_sfu_waits_quietly_for_feeds_not_yet_live(
    server: Server, runtime: Runtime, hooks_of: Any
) -> None:
    """A page that joins a room already on the SFU subscribes to every peer; a peer whose feed
    is not connected is refused ``unknown_peer`` (its ``publisher-added`` comes later). The page
    keeps its status: that refusal is not a failure to show."""
    from playwright.async_api import async_playwright, expect

    host = f"127.0.0.1:{server.port}"
    meet = await factories.tenant(runtime, "meet", [host])
    await set_sfu(runtime, meet, AutoPromoteHumanCount="2")
    hooks = await hooks_of(meet)
    runtime.settings = runtime.settings.model_copy(
        update={"room_max_message_bytes": 64 * 1024, "room_max_messages_per_second": 200}
    )
    silent = [await join(server, host, name) for name in ("A", "B", "C")]  # C promotes
    assert (await silent[0].expect("mode"))["mode"] == "sfu"
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS + MEDIA_ARGS)
        try:
            page = await browser.new_page()
            await page.goto(f"http://{host}/rooms/x")
            await page.fill("#name", "Ann")
            await page.click("text=Join with camera and microphone")
            await expect(page.locator("#mode")).to_have_text("sfu", timeout=10_000)
            # The three refusals were recorded, and each sent right after its record.
            events: list[dict[str, Any]] = []
            while len(named(events, "sfu.subscribe.received")) < 3:
                events = await hooks(len(events) + 1)
            assert {e["code"] for e in named(events, "sfu.subscribe.received")} == {"unknown_peer"}
            # A message after them on the page's socket: once it shows, they were handled.
            key = await factories.api_key(runtime, meet)
            async with server.http() as http:
                demoted = await http.post(
                    "/signal.ashx?sfu-mode=mesh&room=x", headers={"Authorization": f"Bearer {key}"}
                )
            assert demoted.json()["mode"] == "mesh"
            await expect(page.locator("#mode")).to_have_text("mesh", timeout=10_000)
            assert await page.text_content("#status") == "joined"
        finally:
            for client in silent:
                await client.ws.close()
            await browser.close()


async def test_pages_report_their_connections_and_a_stressed_room_moves_to_the_sfu(
    server: Server, runtime: Runtime, hooks_of: Any
) -> None:
    """Every page reports its sending connections (``stats``); with a bitrate threshold no
    real path meets, both pages are stressed, the room fires ``room.bandwidth.degraded`` with
    their measures and moves to the SFU. A page's vote reaches the room as ``preference``."""
    from playwright.async_api import async_playwright, expect

    host = f"127.0.0.1:{server.port}"
    meet = await factories.tenant(runtime, "meet", [host])
    await set_sfu(
        runtime, meet, StressBwMbpsThreshold="1000", MinStressedPeers="2",
        AutoPromoteBwMinHumans="2",
    )  # fmt: skip
    hooks = await hooks_of(meet)
    runtime.settings = runtime.settings.model_copy(
        update={"room_max_message_bytes": 64 * 1024, "room_max_messages_per_second": 200,
                "room_stats_seconds": 1.0}
    )  # fmt: skip
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS + MEDIA_ARGS)
        try:
            pages: list[Any] = []
            for name in ("Ann", "Bob"):
                page = await browser.new_page()
                await page.goto(f"http://{host}/rooms/x")
                await page.fill("#name", name)
                await page.click("text=Join with camera and microphone")
                await page.wait_for_selector("#status:has-text('joined')")
                pages.append(page)
            await pages[1].select_option("#pref", "prefer-mesh")
            events: list[dict[str, Any]] = []
            while not named(events, "room.cascade.promoted"):
                events = await hooks(len(events) + 1)
            (degraded,) = named(events, "room.bandwidth.degraded")
            assert (degraded["stressedCount"], degraded["humanCount"]) == (2, 2)
            sample = degraded["sampleMetrics"]
            # Real measures of a loopback path: some bitrate, no loss to speak of, an RTT in
            # milliseconds. The sample is the largest RTT of its window, and on a machine busy
            # with the rest of the suite (three workers on two cores, two pages encoding video)
            # RTCP's round trips have measured up to 443 ms (a figure in microseconds would still
            # fail).
            assert 0.01 < sample["abrMbps"] < 1000
            assert 0 <= sample["lossPct"] <= 5
            assert 0 <= sample["rttMs"] < 3000
            (promoted,) = named(events, "room.cascade.promoted")
            assert (promoted["trigger"], promoted["reason"]) == (
                "auto-bandwidth", "auto-promote-bandwidth-degraded-stressed-2-of-2",
            )  # fmt: skip
            (vote,) = named(events, "room.client.preference.changed")
            assert (vote["prevPref"], vote["newPref"]) == ("auto", "prefer-mesh")
            for page in pages:
                await expect(page.locator("#mode")).to_have_text("sfu", timeout=10_000)
        finally:
            await browser.close()
