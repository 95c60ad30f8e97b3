"""``switchboard sim vnum|sip``: inbound calls on demand, with their events and transcripts."""

from __future__ import annotations

import asyncio
import os
import re
import sys

import pytest
from httpx import AsyncClient

from switchboard.platform.numbers import service as numbers
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.calls.conftest import Org
from tests.calls.helpers import events


async def _sim(settings: Settings, *args: str) -> str:
    env = {
        **os.environ,
        "SWITCHBOARD_DATABASE_URL": settings.resolved_database_url,
        "SWITCHBOARD_DATA_DIR": str(settings.data_dir),
        "SWITCHBOARD_SECRET_KEY": settings.secret_key,
        "SWITCHBOARD_PUBLIC_BASE_URL": settings.public_base_url,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "switchboard", "sim", *args, "--speed", "5000",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode().strip()


@pytest.mark.parametrize("outcome", ["finished", "transferred-to-vnum"])
async def test_vnum_call_from_a_browser(
    app_client: AsyncClient, runtime: Runtime, org: Org, settings: Settings, outcome: str
) -> None:
    async with runtime.db.transaction() as session:
        await numbers.create_number(
            session, tenant_id=org.id, name="Front desk", number="100", voice="Kore",
            language="en-GB", api_key="vnum-key", system_prompt="You run the front desk. Be kind.",
            box=runtime.box, clock=runtime.clock,
        )  # fmt: skip
    call_id = await _sim(settings, "vnum", "--tenant", "acme", "--number", "100",
                         "--outcome", outcome)  # fmt: skip
    assert call_id.startswith("vnum")
    emitted = await events(runtime, call_id)
    names = [n for n, _ in emitted]
    middle = ["call.transferred"] if outcome == "transferred-to-vnum" else []
    assert names == ["call.started", *middle, "call.ended", "transcript.saved"]
    data = dict(emitted)
    assert data["call.started"]["source"] == "vnum"
    assert data["call.started"]["direction"] == "inbound"
    assert data["call.started"]["number"] == "100"
    assert data["call.started"]["room"]
    ended = data["call.ended"]
    assert set(ended) == {"callId", "number", "room", "outcome", "durationSec", "tokens", "source"}
    assert ended["source"] == "vnum"
    assert ended["outcome"] == ("transferred-to-vnum" if middle else "finished")
    detail = await app_client.get(f"/api.ashx/v1/transcripts/{call_id}", headers=org.headers)
    assert detail.status_code == 200, detail.text
    transcript = detail.json()
    assert transcript["callerSource"] == "vnum"
    assert "front desk" in transcript["turns"][0]["text"].lower()
    # Real figures: the AI peer answered, talked for the call's length, and spent tokens; every
    # turn lies between the start and the end.
    assert transcript["answered"] is True
    assert transcript["durationSec"] == ended["durationSec"] > 0
    assert transcript["tokensTotal"] == ended["tokens"] > 0
    assert transcript["startedUtc"] <= transcript["answeredUtc"] <= transcript["endedUtc"]
    stamps = [turn["ts"] for turn in transcript["turns"]]
    assert transcript["startedUtc"] <= min(stamps) <= max(stamps) <= transcript["endedUtc"]
    listed = await app_client.get("/api.ashx/v1/transcripts?source=vnum", headers=org.headers)
    item = listed.json()["data"][0]
    assert (item["durationSec"], item["tokensTotal"]) == (ended["durationSec"], ended["tokens"])


async def test_sip_call_to_the_receptionist(
    app_client: AsyncClient, runtime: Runtime, org: Org, settings: Settings
) -> None:
    call_id = await _sim(settings, "sip", "--tenant", "acme", "--did", "+493012345",
                         "--from", "+14155550123")  # fmt: skip
    assert re.fullmatch(r"vnum-[0-9a-f]{12}", call_id), call_id  # spec 2.6: inbound ids
    emitted = await events(runtime, call_id)
    assert [n for n, _ in emitted] == [
        "call.answered", "call.started", "call.ended", "transcript.saved",
    ]  # fmt: skip
    data = dict(emitted)
    assert data["call.answered"]["did"] == "+493012345"
    assert data["call.answered"]["fromNumber"] == "+14155550123"
    assert data["call.answered"]["source"] == "ai-live"
    assert data["call.started"]["did"] == "+493012345"
    assert data["call.ended"]["source"] == "sip"
    detail = await app_client.get(f"/api.ashx/v1/transcripts/{call_id}", headers=org.headers)
    assert detail.json()["callerSource"] == "sip"


async def test_unknown_number_fails_cleanly(settings: Settings, org: Org) -> None:
    env = {
        **os.environ,
        "SWITCHBOARD_DATABASE_URL": settings.resolved_database_url,
        "SWITCHBOARD_SECRET_KEY": settings.secret_key,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "switchboard", "sim", "vnum", "--tenant", "acme", "--number", "999",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await process.communicate()
    assert process.returncode != 0
    assert b"no virtual number" in err


async def test_office_tab_call_rings_the_routed_user(
    app_client: AsyncClient, runtime: Runtime, org: Org, settings: Settings
) -> None:
    response = await app_client.post(
        "/api.ashx/v1/inbound-routes",
        json={"Did": "+493012345", "User": "alice"},
        headers=org.headers,
    )
    assert response.status_code == 201, response.text
    call_id = await _sim(settings, "sip", "--tenant", "acme", "--did", "+493012345",
                         "--from", "+14155550123", "--office-tab")  # fmt: skip
    names = [n for n, _ in await events(runtime, call_id)]
    assert names == ["call.answered", "call.started", "call.ended", "transcript.saved"]
    detail = (
        await app_client.get(f"/api.ashx/v1/transcripts/{call_id}", headers=org.headers)
    ).json()
    assert detail["callerSource"] == "office-tab"
    listing = await app_client.get(
        "/api.ashx/v1/transcripts", params={"source": "vnum", "q": "alice"}, headers=org.headers
    )
    assert [item["callId"] for item in listing.json()["data"]] == [call_id]
