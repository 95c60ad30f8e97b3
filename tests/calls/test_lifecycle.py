"""The status machine over HTTP: scheduling, retries, hangup, the watchdog, reconciliation,
listing and tenant isolation."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from httpx import AsyncClient
from pydantic.alias_generators import to_camel

from switchboard.kit.clock import ManualClock
from switchboard.kit.schemas import Page
from switchboard.platform.calls import repository, tasks
from switchboard.platform.calls.schemas import CallRecord
from switchboard.runtime import Runtime
from tests.calls.conftest import Org, make_org
from tests.calls.fakebridge import SECRET, FakeBridge
from tests.calls.helpers import call_body, events, place, settle
from tests.conftest import PRIMARY_HOST

CALLS = "/api.ashx/v1/calls"


async def _record(client: AsyncClient, org: Org, call_id: str) -> dict[str, Any]:
    response = await client.get(f"{CALLS}/{call_id}", headers=org.headers)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def _names(emitted: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [name for name, _ in emitted]


async def test_scheduled_call_is_dialled_when_due(
    app_client: AsyncClient, runtime: Runtime, org: Org, clock: ManualClock
) -> None:
    created = await place(app_client, org.headers, scheduleAtUtc="2026-01-01T13:00:00Z")
    record = await _record(app_client, org, created["callId"])
    assert record["status"] == "scheduled"
    assert record["scheduledForUtc"] == "2026-01-01T13:00:00Z"
    assert record["dispatchedAtUtc"] == ""
    assert record["endedAtUtc"] is None
    assert record["endedReason"] == ""
    assert '"ok":true' in created["bridgeReply"]

    assert await tasks.dispatch_due(runtime) == 0
    clock.advance(3599)
    assert await tasks.dispatch_due(runtime) == 0
    clock.advance(1)
    assert await tasks.dispatch_due(runtime) == 1
    assert await tasks.dispatch_due(runtime) == 0
    # read the row directly: the simulated call is already talking to the platform meanwhile
    async with runtime.db.transaction() as session:
        call = await repository.get(session, tenant_id=org.id, call_id=created["callId"])
        assert call is not None
        assert call.status in ("in-flight", "ended-success")
        assert call.dispatched_at is not None
    await settle(runtime)
    record = await _record(app_client, org, created["callId"])
    assert record["status"] == "ended-success"
    assert record["dispatchedAtUtc"] == "2026-01-01T13:00:00Z"
    assert _names(await events(runtime, created["callId"])) == [
        "call.answered", "call.started", "outbound-ai.finished", "transcript.saved",
    ]  # fmt: skip


async def test_no_answer_retries_until_retries_run_out(
    app_client: AsyncClient, runtime: Runtime, org: Org, clock: ManualClock
) -> None:
    created = await place(app_client, org.headers, phone="+14155550101", retries=2,
                          retryDelayMinutes=5)  # fmt: skip
    call_id = created["callId"]
    await settle(runtime)
    record = await _record(app_client, org, call_id)
    assert record["status"] == "ended-failed-retry-pending"
    assert (record["attempt"], record["retriesLeft"]) == (1, 2)
    assert record["endedReason"] == "no-answer"

    assert await tasks.dispatch_due(runtime) == 0
    clock.advance(299)
    assert await tasks.dispatch_due(runtime) == 0
    clock.advance(1)
    assert await tasks.dispatch_due(runtime) == 1
    await settle(runtime)
    record = await _record(app_client, org, call_id)
    assert record["status"] == "ended-failed-retry-pending"
    assert (record["attempt"], record["retriesLeft"]) == (2, 1)

    clock.advance(300)
    assert await tasks.dispatch_due(runtime) == 1
    await settle(runtime)
    record = await _record(app_client, org, call_id)
    assert record["status"] == "ended-failed-final"
    assert (record["attempt"], record["retriesLeft"]) == (3, 0)
    clock.advance(3600)
    assert await tasks.dispatch_due(runtime) == 0
    finished = [d for n, d in await events(runtime, call_id) if n == "outbound-ai.finished"]
    assert [d["outcome"] for d in finished] == ["no-answer"] * 3


@pytest.mark.parametrize(
    ("ending", "status"), [("04", "ended-failed-final"), ("00", "ended-success")]
)
async def test_other_outcomes_do_not_retry(
    app_client: AsyncClient, runtime: Runtime, org: Org, clock: ManualClock, ending: str,
    status: str,
) -> None:  # fmt: skip
    created = await place(app_client, org.headers, phone=f"+141555501{ending}", retries=3)
    await settle(runtime)
    clock.advance(3600)
    assert await tasks.dispatch_due(runtime) == 0
    record = await _record(app_client, org, created["callId"])
    assert (record["status"], record["attempt"], record["retriesLeft"]) == (status, 1, 3)


async def test_hangup_of_a_scheduled_call_cancels_it(
    app_client: AsyncClient, runtime: Runtime, org: Org, clock: ManualClock
) -> None:
    created = await place(app_client, org.headers, scheduleAtUtc="2026-01-01T13:00:00Z")
    response = await app_client.post(f"{CALLS}/{created['callId']}/hangup", headers=org.headers)
    assert response.status_code == 200
    assert response.json() == {
        "ok": True, "callId": created["callId"], "newStatus": "cancelled", "actor": "admin",
    }  # fmt: skip
    clock.advance(7200)
    assert await tasks.dispatch_due(runtime) == 0
    record = await _record(app_client, org, created["callId"])
    assert (record["status"], record["endedReason"]) == ("cancelled", "cancelled")
    assert record["endedAtUtc"] == "2026-01-01T12:00:00Z"
    again = await app_client.post(f"{CALLS}/{created['callId']}/hangup", headers=org.headers)
    assert again.json() == {
        "ok": True, "callId": created["callId"], "newStatus": "cancelled", "actor": "admin",
        "wasNoop": True,
    }  # fmt: skip
    assert await events(runtime, created["callId"]) == []


async def test_hangup_of_a_retry_pending_call_cancels_the_retry(
    app_client: AsyncClient, runtime: Runtime, org: Org, clock: ManualClock
) -> None:
    created = await place(app_client, org.headers, phone="+14155550101", retries=1)
    await settle(runtime)
    response = await app_client.post(f"{CALLS}/{created['callId']}/hangup", headers=org.headers)
    assert response.json()["newStatus"] == "cancelled"
    assert "wasNoop" not in response.json()
    clock.advance(3600)
    assert await tasks.dispatch_due(runtime) == 0
    assert (await _record(app_client, org, created["callId"]))["attempt"] == 1


async def test_hangup_of_an_in_flight_call_terminates_it(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    created = await place(app_client, org.headers, phone="+14155550106", maxSeconds=3600)
    response = await app_client.post(f"{CALLS}/{created['callId']}/hangup", headers=org.headers)
    assert response.json() == {
        "ok": True, "callId": created["callId"], "newStatus": "cancelled", "actor": "admin",
    }  # fmt: skip
    await settle(runtime)
    record = await _record(app_client, org, created["callId"])
    assert record["status"] == "cancelled"
    assert record["endedReason"] == "cancelled"
    finished = [
        d for n, d in await events(runtime, created["callId"]) if n == "outbound-ai.finished"
    ]
    assert len(finished) == 1
    assert finished[0]["outcome"] == "cancelled"
    assert finished[0]["talkSec"] < 3600


@pytest.mark.parametrize("ending", ["00", "05"])
async def test_hangup_of_an_ended_call_is_a_noop(
    app_client: AsyncClient, runtime: Runtime, org: Org, ending: str
) -> None:
    created = await place(app_client, org.headers, phone=f"+141555501{ending}")
    await settle(runtime)
    before = await _record(app_client, org, created["callId"])
    response = await app_client.post(f"{CALLS}/{created['callId']}/hangup", headers=org.headers)
    assert response.status_code == 200
    assert response.json() == {
        "ok": True, "callId": created["callId"], "newStatus": before["status"], "actor": "admin",
        "wasNoop": True,
    }  # fmt: skip
    assert await _record(app_client, org, created["callId"]) == before


async def test_another_tenants_call_is_404(
    app_client: AsyncClient, runtime: Runtime, org: Org, other_org: Org
) -> None:
    created = await place(app_client, org.headers)
    await settle(runtime)
    call_id = created["callId"]
    for method, path in (("GET", f"{CALLS}/{call_id}"), ("POST", f"{CALLS}/{call_id}/hangup")):
        response = await app_client.request(method, path, headers=other_org.headers)
        assert response.status_code == 404
        assert response.json()["error"] == "not_found"
    listing = await app_client.get(CALLS, headers=other_org.headers)
    assert listing.json()["total"] == 0
    missing = await app_client.get(f"{CALLS}/oac-000000000000", headers=org.headers)
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"


async def test_list_filters_by_status_and_pages(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    scheduled = [
        (await place(app_client, org.headers, scheduleAtUtc="2026-02-01T00:00:00Z"))["callId"]
        for _ in range(3)
    ]
    done = (await place(app_client, org.headers))["callId"]
    await settle(runtime)
    everything = (await app_client.get(CALLS, headers=org.headers)).json()
    assert everything["total"] == 4
    assert [item["callId"] for item in everything["data"]] == [done, *reversed(scheduled)]
    assert everything["next"] is None
    only = (
        await app_client.get(CALLS, params={"status": "scheduled,cancelled"}, headers=org.headers)
    ).json()
    assert {item["callId"] for item in only["data"]} == set(scheduled)
    page = (
        await app_client.get(CALLS, params={"status": "scheduled", "limit": 2}, headers=org.headers)
    ).json()
    assert (page["total"], page["limit"], page["offset"], len(page["data"])) == (3, 2, 0, 2)
    assert page["next"] == f"{CALLS}?status=scheduled&limit=2&offset=2"
    following = (await app_client.get(page["next"], headers=org.headers)).json()
    assert (following["total"], len(following["data"])) == (3, 1)
    assert following["next"] is None
    past = await app_client.get(
        CALLS, params={"status": "scheduled", "offset": 10}, headers=org.headers
    )
    assert (past.json()["total"], past.json()["data"]) == (3, [])  # counted without a page
    item = everything["data"][0]
    assert {"email", "voice", "language", "model", "scheduledForUtc", "errorDetail",
            "retryDelayMinutes"} <= set(item)  # fmt: skip
    bad = await app_client.get(CALLS, params={"status": "done"}, headers=org.headers)
    assert bad.status_code == 400
    assert "status" in bad.json()["error_description"]
    spaced = await app_client.get(CALLS, params={"status": " scheduled ,"}, headers=org.headers)
    assert spaced.json()["total"] == 3
    # A repeated parameter adds its values (none is dropped): ?status=a&status=b is ?status=a,b.
    repeated = await app_client.get(
        CALLS, params=[("status", "scheduled"), ("status", "ended-success")], headers=org.headers
    )
    assert repeated.json()["total"] == 4
    bad_first = await app_client.get(
        CALLS, params=[("status", "done"), ("status", "scheduled")], headers=org.headers
    )
    assert bad_first.status_code == 400
    assert "done" in bad_first.json()["error_description"]
    document = (await app_client.get("/openapi.json")).json()
    [status] = [p for p in document["paths"][CALLS]["get"]["parameters"] if p["name"] == "status"]
    pattern = status["schema"]["anyOf"][0]["pattern"]  # what the list accepts, described
    assert re.fullmatch(pattern, "in-flight, scheduled")
    assert not re.fullmatch(pattern, "done")
    too_big = await app_client.get(CALLS, params={"limit": 501}, headers=org.headers)
    assert too_big.status_code == 400


async def test_records_are_exactly_the_documented_model(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    """The list and the single read build their JSON directly (not through the response
    model): each body must be what ``Page[CallRecord]`` and ``CallRecord`` would send."""
    await place(app_client, org.headers, scheduleAtUtc="2026-02-01T00:00:00Z")
    await place(app_client, org.headers)
    await settle(runtime)
    listed = await app_client.get(CALLS, headers=org.headers)
    body = listed.json()
    assert body == Page[CallRecord].model_validate(body).model_dump(mode="json")
    assert list(body) == ["data", "total", "limit", "offset", "next"]
    for item in body["data"]:
        assert set(item) == {to_camel(name) for name in CallRecord.model_fields}
        one = await app_client.get(f"{CALLS}/{item['callId']}", headers=org.headers)
        assert one.headers["content-type"] == "application/json"
        assert one.json() == item
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", item["createdAtUtc"])
    scheduled = next(i for i in body["data"] if i["status"] == "scheduled")
    assert scheduled["scheduledForUtc"] == "2026-02-01T00:00:00Z"
    assert scheduled["endedAtUtc"] is None
    assert scheduled["dispatchedAtUtc"] == ""


async def test_requires_admin_bearer(app_client: AsyncClient, org: Org) -> None:
    assert (await app_client.get(CALLS)).status_code == 401
    assert (await app_client.post(CALLS, json=call_body())).status_code == 401


# Against a bridge that never calls back ------------------------------------------------------


async def test_watchdog_ends_a_call_the_bridge_never_ends(
    client_with: Any,
    fake_bridge: FakeBridge,
) -> None:
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    created = (await client.post(CALLS, json=call_body(maxSeconds=100), headers=org.headers)).json()
    assert len(fake_bridge.dials) == 1
    dial = fake_bridge.dials[0]
    assert (dial["callId"], dial["attempt"]) == (created["callId"], 1)
    assert dial["apiKey"] == "AIzaSy-test-key-123456"
    assert dial["trunkIds"] == ["default"]
    assert dial["callbackUrl"] == f"http://{PRIMARY_HOST}/bridge.ashx/v1/events"

    grace = runtime.settings.call_watchdog_grace_seconds
    clock.advance(100 + 60 + grace - 1)
    assert await tasks.watchdog_pass(runtime) == 0
    clock.advance(1)
    assert await tasks.watchdog_pass(runtime) == 1
    assert await tasks.watchdog_pass(runtime) == 0
    record = (await client.get(f"{CALLS}/{created['callId']}", headers=org.headers)).json()
    assert record["status"] == "ended-failed-final"
    assert "maxSeconds" in record["errorDetail"]
    assert record["endedReason"] == ""  # a technical failure has no outcome
    finished = dict(await events(runtime, created["callId"]))["outbound-ai.finished"]
    assert (finished["outcome"], finished["errorDetail"]) == ("", record["errorDetail"])
    assert [n for n, _ in await events(runtime, created["callId"])] == ["outbound-ai.finished"]
    assert [h["callId"] for h in fake_bridge.hangups] == [created["callId"]]


@pytest.mark.parametrize(("state", "closed"), [("unknown", True), ("answered", False)])
async def test_reconcile_asks_the_bridge_about_orphaned_calls(
    client_with: Any,
    fake_bridge: FakeBridge,
    state: str,
    closed: bool,
) -> None:
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    fake_bridge.state = state
    created = (await client.post(CALLS, json=call_body(), headers=org.headers)).json()
    # the dialling process is alive: its lease is fresh
    assert await tasks.reconcile(runtime, owner="successor") == 0
    clock.advance(runtime.settings.call_lease_seconds + 1)
    assert await tasks.reconcile(runtime, owner="successor") == int(closed)
    assert await tasks.reconcile(runtime, owner="successor") == 0
    record = (await client.get(f"{CALLS}/{created['callId']}", headers=org.headers)).json()
    if closed:
        assert record["status"] == "ended-failed-final"
        assert record["errorDetail"] == tasks.LOST_DETAIL
        assert [n for n, _ in await events(runtime)] == ["outbound-ai.finished"]
    else:
        assert record["status"] == "in-flight"
        assert await events(runtime) == []


async def test_heartbeat_keeps_a_live_process_calls(
    client_with: Any,
    fake_bridge: FakeBridge,
) -> None:
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    await client.post(CALLS, json=call_body(), headers=org.headers)
    for _ in range(5):
        clock.advance(runtime.settings.call_lease_seconds - 1)
        assert await tasks.heartbeat(runtime) == 1
        assert await tasks.reconcile(runtime, owner="successor") == 0


async def test_two_dispatchers_never_dial_the_same_attempt(
    client_with: Any,
    fake_bridge: FakeBridge,
) -> None:
    first, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    second, _ = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    org = await make_org(first, "acme", PRIMARY_HOST)
    for _ in range(40):
        response = await client.post(
            CALLS, json=call_body(scheduleAtUtc="2026-01-01T12:00:00Z"), headers=org.headers
        )
        assert response.status_code == 200
    claimed = await asyncio.gather(
        tasks.dispatch_due(first, owner="worker-a", limit=7),
        tasks.dispatch_due(second, owner="worker-b", limit=7),
        tasks.dispatch_due(first, owner="worker-c", limit=50),
        tasks.dispatch_due(second, owner="worker-d", limit=50),
    )
    assert sum(claimed) == 40
    keys = [(d["callId"], d["attempt"]) for d in fake_bridge.dials]
    assert len(keys) == 40 == len(set(keys))
    listing = (await client.get(CALLS, params={"status": "in-flight"}, headers=org.headers)).json()
    assert listing["total"] == 40


async def test_unreachable_bridge_keeps_a_scheduled_call_and_retries_the_dial(
    client_with: Any,
    fake_bridge: FakeBridge,
) -> None:
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    created = (
        await client.post(CALLS, json=call_body(scheduleAtUtc="2026-01-01T12:00:00Z"),
                          headers=org.headers)
    ).json()  # fmt: skip
    broken, _ = await client_with(bridge_url="http://127.0.0.1:9", bridge_secret=SECRET)
    assert await tasks.dispatch_due(broken, owner="w") == 1
    record = (await client.get(f"{CALLS}/{created['callId']}", headers=org.headers)).json()
    assert record["status"] == "dispatching"
    assert "unreachable" in record["errorDetail"]
    assert await tasks.dispatch_due(runtime, owner="w") == 0  # backing off
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    clock.advance(15)
    assert await tasks.dispatch_due(runtime, owner="w") == 1
    record = (await client.get(f"{CALLS}/{created['callId']}", headers=org.headers)).json()
    assert (record["status"], record["errorDetail"], record["attempt"]) == ("in-flight", "", 1)
    assert len(fake_bridge.dials) == 1
