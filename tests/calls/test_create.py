"""POST /v1/calls: validation, defaults, whitelist, trunks, secrets, bridge errors."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import orjson
import pytest
from httpx import AsyncClient
from sqlalchemy import select, text

from switchboard.platform.calls.models import Call
from switchboard.runtime import Runtime
from tests.calls.conftest import Org, make_org
from tests.calls.fakebridge import SECRET, FakeBridge
from tests.calls.helpers import PROMPT, call_body, events, place, settle
from tests.conftest import PRIMARY_HOST

CALLS = "/api.ashx/v1/calls"


async def _count_calls(runtime: Runtime) -> int:
    async with runtime.db.transaction() as session:
        return int((await session.execute(text("SELECT count(*) FROM calls"))).scalar_one())


async def _whitelist(client: AsyncClient, org: Org) -> list[str]:
    response = await client.get(
        "/signal.ashx", params={"whitelist": "list"}, headers={**org.headers, "Host": org.host}
    )
    assert response.status_code == 200, response.text
    return [entry["number"] for entry in response.json()["numbers"]]


INVALID: list[tuple[str, Any, str]] = [
    ("phone", "0415555", "phone"),
    ("phone", "+0123456789", "phone"),
    ("phone", "+1 415 555 0100", "phone"),
    ("phone", None, "phone"),
    ("email", "not-an-email", "email"),
    ("email", None, "email"),
    ("systemPrompt", "   ", "systemPrompt"),
    ("systemPrompt", None, "systemPrompt"),
    ("apiKey", "", "apiKey"),
    ("apiKey", None, "apiKey"),
    ("voice", "Alice", "voice"),
    ("language", "english please", "language"),
    ("maxSeconds", 9, "maxSeconds"),
    ("maxSeconds", 3601, "maxSeconds"),
    ("maxSeconds", "lots", "maxSeconds"),
    ("retries", -1, "retries"),
    ("retries", 11, "retries"),
    ("retryDelayMinutes", 0, "retryDelayMinutes"),
    ("retryDelayMinutes", 1441, "retryDelayMinutes"),
    ("scheduleAtUtc", "tomorrow", "scheduleAtUtc"),
    ("scheduleAtUtc", "2026-05-01T09:00:00+02:00", "scheduleAtUtc"),
    ("scheduleAtUtc", "2026-05-01", "scheduleAtUtc"),
    # a caller-ID label goes into a SIP header and an e-mail subject: no line breaks
    ("displayName", "Bob\r\nX-Injected: 1", "displayName: must not hold control characters"),
    ("displayName", "tab\tstop", "displayName"),
    ("displayName", "next\u2028line", "displayName"),
]


async def test_invalid_input_is_400_naming_the_field_and_stores_nothing(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    for field, value, named in INVALID:
        body = call_body()
        if value is None:
            body.pop(field)
        else:
            body[field] = value
        response = await app_client.post(CALLS, json=body, headers=org.headers)
        assert response.status_code == 400, (field, value, response.text)
        assert response.json()["error"] == "invalid_request"
        assert named in response.json()["error_description"], (field, value)
    assert await _count_calls(runtime) == 0
    assert await _whitelist(app_client, org) == []
    assert await events(runtime) == []


async def test_malformed_json_is_400(app_client: AsyncClient, org: Org) -> None:
    response = await app_client.post(
        CALLS, content=b"{not json", headers={**org.headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


async def test_pascal_case_body_and_response_shape(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    body = {
        "Phone": "+14155550100",
        "Email": "ops@example.com",
        "SystemPrompt": PROMPT,
        "ApiKey": "secret-ai-key-987",
        "Voice": "Puck",
        "Language": "de-DE",
        "MaxSeconds": 120,
        "Retries": 2,
        "RetryDelayMinutes": 7,
        "DisplayName": "Acme Clinic",
    }
    response = await app_client.post(CALLS, json=body, headers=org.headers)
    assert response.status_code == 200, response.text
    created = response.json()
    assert list(created) == [
        "ok", "callId", "tenant", "whitelistAdded", "whitelistError", "bridgeReply"
    ]  # fmt: skip
    assert created["ok"] is True
    assert re.fullmatch(r"oac-[0-9a-f]{12}", created["callId"])
    assert created["whitelistAdded"] is True
    assert created["whitelistError"] is None
    assert isinstance(created["bridgeReply"], str)
    reply = orjson.loads(created["bridgeReply"])
    assert reply["accepted"] is True
    assert reply["callId"] == created["callId"]
    await settle(runtime)

    record = (await app_client.get(f"{CALLS}/{created['callId']}", headers=org.headers)).json()
    assert record["voice"] == "Puck"
    assert record["language"] == "de-DE"
    assert record["displayName"] == "Acme Clinic"
    assert record["retryDelayMinutes"] == 7
    assert record["retriesLeft"] == 2
    assert record["requestedBy"] == "admin"
    assert record["scheduledForUtc"] is None
    assert set(record) == {
        "callId", "tenant", "requestedBy", "phone", "displayName", "email", "voice",
        "language", "model", "status", "createdAtUtc", "scheduledForUtc", "dispatchedAtUtc",
        "answeredAtUtc", "endedAtUtc", "endedReason", "durationSec", "trunkId",
        "transcriptPath", "errorDetail", "sipStatus", "attempt", "retriesLeft",
        "retryDelayMinutes",
    }  # fmt: skip


async def test_tenant_defaults_apply(app_client: AsyncClient, runtime: Runtime, org: Org) -> None:
    from switchboard.tenants import service as tenants

    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, org.name)
        await tenants.set_setting(session, tenant, "DefaultVoice", "Kore")
        await tenants.set_setting(session, tenant, "DefaultLanguage", "fr-FR")
        await tenants.set_setting(session, tenant, "DefaultModel", "model-x")
        await tenants.set_setting(session, tenant, "DefaultTrunkId", "trunk-main")
    created = await place(app_client, org.headers)
    await settle(runtime)
    record = (await app_client.get(f"{CALLS}/{created['callId']}", headers=org.headers)).json()
    assert (record["voice"], record["language"], record["model"]) == ("Kore", "fr-FR", "model-x")
    assert record["trunkId"] == "trunk-main"
    assert record["displayName"] == record["phone"]


async def test_whitelist_added_once(app_client: AsyncClient, runtime: Runtime, org: Org) -> None:
    first = await place(app_client, org.headers, phone="+14155550142")
    second = await place(app_client, org.headers, phone="+14155550142")
    await settle(runtime)
    assert first["whitelistAdded"] is True
    assert second["whitelistAdded"] is False
    assert await _whitelist(app_client, org) == ["+14155550142"]
    # The second call was stored by the one-statement INSERT (decision 0999), the first inside
    # the write that also added the number: both records read back alike.
    records = [
        (await app_client.get(f"{CALLS}/{c['callId']}", headers=org.headers)).json()
        for c in (first, second)
    ]
    differ = {"callId", "transcriptPath", "createdAtUtc", "dispatchedAtUtc"}
    assert [{k: v for k, v in r.items() if k not in differ} for r in records] == [
        {k: v for k, v in records[0].items() if k not in differ}
    ] * 2
    assert records[1]["createdAtUtc"] is not None


async def test_trunks_follow_the_outbound_routes(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    response = await app_client.post(
        "/api.ashx/v1/outbound-routes",
        json={"match": "+4930*", "trunkIds": ["berlin-a", "berlin-b"]},
        headers=org.headers,
    )
    assert response.status_code == 201, response.text
    berlin = await place(app_client, org.headers, phone="+4930123456700")
    rejected = await place(app_client, org.headers, phone="+4930123456705")
    other = await place(app_client, org.headers, phone="+14155550100")
    await settle(runtime)
    get = app_client.get
    assert (await get(f"{CALLS}/{berlin['callId']}", headers=org.headers)).json()["trunkId"] == (
        "berlin-a"
    )
    assert (await get(f"{CALLS}/{other['callId']}", headers=org.headers)).json()["trunkId"] == (
        "default"
    )
    failed = (await get(f"{CALLS}/{rejected['callId']}", headers=org.headers)).json()
    assert "berlin-a" in failed["errorDetail"]
    assert "berlin-b" in failed["errorDetail"]


async def test_secrets_are_sealed_and_never_returned(
    app_client: AsyncClient, runtime: Runtime, org: Org, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    created = await place(app_client, org.headers, apiKey="AI-KEY-do-not-leak-77")
    await settle(runtime)
    listing = await app_client.get(CALLS, headers=org.headers)
    one = await app_client.get(f"{CALLS}/{created['callId']}", headers=org.headers)
    for body in (listing.text, one.text, orjson.dumps(created).decode()):
        assert "AI-KEY-do-not-leak-77" not in body
        assert "dentist appointment" not in body
    async with runtime.db.transaction() as session:
        call = (await session.execute(select(Call))).scalar_one()
    assert "AI-KEY" not in call.api_key_sealed
    assert "dentist" not in call.system_prompt_sealed
    assert runtime.box.open(call.api_key_sealed) == "AI-KEY-do-not-leak-77"
    assert "AI-KEY-do-not-leak-77" not in caplog.text
    assert "dentist appointment" not in caplog.text


@pytest.mark.parametrize(
    ("overrides", "status", "code"),
    [
        ({"bridge_url": "none"}, 503, "bridge_not_configured"),
        (
            {"bridge_url": "http://127.0.0.1:9", "bridge_secret": "s3cret"},
            502,
            "bridge_unreachable",
        ),
        ({"bridge_url": "http://127.0.0.1:9"}, 503, "bridge_not_configured"),
    ],
)
@pytest.mark.parametrize("scheduled", [False, True])
async def test_bridge_errors_leave_nothing_behind(
    client_with: Any, overrides: dict[str, str], status: int, code: str, scheduled: bool
) -> None:
    runtime, client = await client_with(**overrides)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    extra = {"scheduleAtUtc": "2026-01-02T08:00:00Z"} if scheduled else {}
    response = await client.post(CALLS, json=call_body(**extra), headers=org.headers)
    assert response.status_code == status, response.text
    assert response.json()["error"] == code
    assert response.json()["error_description"]
    assert await _count_calls(runtime) == 0
    assert await _whitelist(client, org) == []
    assert await events(runtime) == []


@pytest.mark.parametrize(
    ("dial_status", "code"), [(400, "bridge_rejected"), (503, "bridge_unreachable")]
)
async def test_a_refused_dial_leaves_nothing_behind(
    client_with: Any, fake_bridge: FakeBridge, dial_status: int, code: str
) -> None:
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    fake_bridge.dial_status = dial_status
    response = await client.post(CALLS, json=call_body(), headers=org.headers)
    assert (response.status_code, response.json()["error"]) == (502, code)
    assert len(fake_bridge.dials) == 1
    assert await _count_calls(runtime) == 0
    assert await _whitelist(client, org) == []
    assert await events(runtime) == []


async def test_no_write_lock_is_held_while_the_bridge_answers(
    client_with: Any, fake_bridge: FakeBridge
) -> None:
    """Decision 0931: another writer of the process commits while a call waits for its dial
    (on SQLite the request used to hold the write lock, and this writer waited for the dial)."""
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    fake_bridge.hold = asyncio.Event()
    placing = asyncio.create_task(client.post(CALLS, json=call_body(), headers=org.headers))
    await asyncio.wait_for(fake_bridge.dialling.wait(), 10)
    assert await asyncio.wait_for(_count_calls(runtime), 10) == 0  # a write transaction
    fake_bridge.hold.set()
    response = await placing
    assert response.status_code == 200, response.text
    assert await _count_calls(runtime) == 1
