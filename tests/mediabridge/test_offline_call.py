"""The default engine end to end: a real SIP call through the bridge process with ``--engine
offline``, a sipp callee that talks (sipp's recorded speech), and the transcript the platform
saved: the AI's lines in words, the caller's turns only as measured speech."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.calls.helpers import PROMPT
from tests.mediabridge.components import BridgeProcess, Sipp, free_port
from tests.mediabridge.conftest import Platform

pytestmark = pytest.mark.slow


@pytest.fixture
def offline_bridge(tmp_path: Path) -> Iterator[BridgeProcess]:
    port = free_port()
    trunks = tmp_path / "trunks.toml"
    trunks.write_text(f'[trunks.carrier]\nuri = "sip:127.0.0.1:{port}"\n')
    process = BridgeProcess(trunks=trunks, engine="offline")
    process.carrier_port = port  # type: ignore[attr-defined]
    process.start(tmp_path)
    yield process
    process.kill()


@pytest.fixture
def bridge_url(offline_bridge: BridgeProcess) -> str:
    """The platform dials this test's own bridge, which runs the offline engine."""
    return offline_bridge.url


async def test_the_offline_engine_speaks_listens_and_finishes(
    platform: Platform, offline_bridge: BridgeProcess, tmp_path: Path
) -> None:
    port: int = offline_bridge.carrier_port  # type: ignore[attr-defined]
    callee = await Sipp("uas_talk_twice.xml", port).start(
        tmp_path, extra=["-mi", "127.0.0.1"], timeout_sec=110
    )
    try:
        await platform.route("+14155550150", ["carrier"])
        call_id = await platform.place("+14155550150", maxSeconds=120)
        record = await platform.ended(call_id, within=120)
        assert await callee.exit_code(within=30) == 0  # sipp saw its BYE
    finally:
        await callee.stop()

    assert (record["status"], record["endedReason"], record["sipStatus"]) == (
        "ended-success", "finished", 200,
    )  # fmt: skip
    assert record["errorDetail"] == ""
    response = await platform.http.get(
        f"/api.ashx/v1/transcripts/{call_id}", headers=platform.headers
    )
    assert response.status_code == 200, response.text
    transcript = response.json()
    assert transcript["outcome"] == "finished"
    assert transcript["tokensTotal"] == 0
    ai = [t["text"] for t in transcript["turns"] if t["speaker"] == "AI"]
    caller = [t["text"] for t in transcript["turns"] if t["speaker"] == "Caller"]
    first_sentence = PROMPT.split(". ")[0]
    assert ai, transcript["turns"]
    assert first_sentence in ai[0]
    # sipp's recorded speech was heard and recorded honestly: a length, never words
    assert caller, transcript["turns"]
    assert all(re.fullmatch(r"\[caller spoke \d+\.\d s\]", text) for text in caller), caller
    assert transcript["durationSec"] > 0
