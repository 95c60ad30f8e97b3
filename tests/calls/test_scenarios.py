"""Each simulator scenario end to end over HTTP: record, transcript, events and their order."""

from __future__ import annotations

import itertools
import re

import pytest
from httpx import AsyncClient

from switchboard.runtime import Runtime
from tests.calls.conftest import Org
from tests.calls.helpers import events, place, settle

ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
ANSWERED = ["call.answered", "call.started"]
FINISHED = ["outbound-ai.finished"]
SAVED = ["transcript.saved"]

SCENARIOS = [
    # ending, status, endedReason, events, answered
    ("00", "ended-success", "finished", ANSWERED + FINISHED + SAVED, True),
    ("01", "ended-failed-final", "no-answer", FINISHED, False),
    ("02", "ended-failed-final", "voicemail", ANSWERED + FINISHED + SAVED, True),
    ("03", "ended-failed-final", "far-hangup", ANSWERED + FINISHED + SAVED, True),
    ("04", "ended-failed-final", "not-now", ANSWERED + FINISHED + SAVED, True),
    ("05", "ended-failed-final", "", FINISHED, False),
    ("06", "ended-success", "max-duration", ANSWERED + FINISHED + SAVED, True),
    (
        "07",
        "ended-success",
        "transferred-to-vnum",
        [*ANSWERED, "call.transferred", *FINISHED, *SAVED],
        True,
    ),
    ("42", "ended-success", "finished", ANSWERED + FINISHED + SAVED, True),
]


@pytest.mark.parametrize(("ending", "status", "reason", "names", "answered"), SCENARIOS)
async def test_scenario(
    app_client: AsyncClient,
    runtime: Runtime,
    org: Org,
    ending: str,
    status: str,
    reason: str,
    names: list[str],
    answered: bool,
) -> None:
    headers = org.headers
    phone = f"+141555501{ending}"
    created = await place(app_client, headers, phone=phone, displayName="Dr Smith", maxSeconds=60)
    call_id = created["callId"]
    assert re.fullmatch(r"oac-[0-9a-f]{12}", call_id)
    assert created["tenant"] == "acme"
    await settle(runtime)

    response = await app_client.get(f"/api.ashx/v1/calls/{call_id}", headers=headers)
    assert response.status_code == 200
    record = response.json()
    assert record["status"] == status
    assert record["endedReason"] == reason
    assert ISO_RE.match(record["endedAtUtc"])
    assert ISO_RE.match(record["dispatchedAtUtc"])
    assert bool(record["answeredAtUtc"]) is answered
    assert record["attempt"] == 1
    assert record["retriesLeft"] == 0
    assert (record["errorDetail"] != "") is (ending == "05")

    emitted = await events(runtime, call_id)
    assert [name for name, _ in emitted] == names
    finished = dict(emitted)["outbound-ai.finished"]
    assert finished["outcome"] == reason  # the call record and the event agree
    assert finished["answered"] is answered
    assert finished["phone"] == phone
    assert finished["displayName"] == "Dr Smith"
    assert finished["trunk"] == "default"
    assert finished["talkSec"] == record["durationSec"]
    assert set(finished) == {
        "callId", "phone", "displayName", "outcome", "answered", "talkSec", "trunk",
        "inputTurns", "outputTurns", "errorDetail",
    }  # fmt: skip
    if ending == "05":
        assert "rejected" in finished["errorDetail"]
    if ending == "06":
        assert record["durationSec"] == 60

    if "transcript.saved" in names:
        saved = dict(emitted)["transcript.saved"]
        assert saved == {
            "callId": call_id,
            "phone": phone,
            "displayName": "Dr Smith",
            "file": record["transcriptPath"],
            "outcome": reason,
            "source": "outbound-ai",
        }
        detail = await app_client.get(f"/api.ashx/v1/transcripts/{call_id}", headers=headers)
        assert detail.status_code == 200, detail.text
        turns = detail.json()["turns"]
        assert turns
        assert all(ISO_RE.match(t["ts"]) for t in turns)
        if ending not in ("02",):
            speakers = [t["speaker"] for t in turns]
            assert speakers[0] == "AI"
            assert all(a != b for a, b in itertools.pairwise(speakers))
            assert "dentist appointment" in turns[0]["text"]
    else:
        assert record["transcriptPath"] == ""
        missing = await app_client.get(f"/api.ashx/v1/transcripts/{call_id}", headers=headers)
        assert missing.status_code == 404


async def test_answered_and_started_payloads(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    headers = org.headers
    created = await place(app_client, headers, phone="+14155550107")
    await settle(runtime)
    emitted = dict(await events(runtime, created["callId"]))
    assert emitted["call.answered"] == {
        "callId": created["callId"],
        "phone": "+14155550107",
        "displayName": "+14155550107",
        "trunkId": "default",
        "direction": "outbound",
        "source": "outbound-ai",
        "answerMs": 4000,
    }
    assert emitted["call.started"] == {
        "callId": created["callId"],
        "phone": "+14155550107",
        "displayName": "+14155550107",
        "direction": "outbound",
        "source": "outbound-ai",
    }
    assert emitted["call.transferred"] == {
        "callId": created["callId"],
        "fromOutbound": created["callId"],
        "fromPhone": "+14155550107",
        "toUser": "reception",
        "transferType": "outbound-to-user",
        "trunkId": "default",
        "source": "outbound-ai",
    }
