"""The bridge protocol over HTTP: signed callbacks, idempotent dials, the mounted simulator."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from httpx import AsyncClient

from switchboard.bridge import protocol
from switchboard.platform.bridging.client import bridge_for, bridge_secret, run_in_process
from switchboard.platform.callbacks.local import in_process_simulator
from switchboard.platform.calls import tasks
from switchboard.platform.calls.models import Call
from switchboard.runtime import Runtime
from tests.calls.conftest import Org, make_org
from tests.calls.fakebridge import SECRET, FakeBridge
from tests.calls.helpers import call_body, events, place, settle
from tests.conftest import PRIMARY_HOST

EVENTS = protocol.CALLBACK_PATH


def _signed(secret: str, payload: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    body = orjson.dumps(payload)
    return body, {
        protocol.SIGNATURE_HEADER: protocol.sign(secret, body),
        "Content-Type": "application/json",
    }


def _ended(call_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "protocol": 1, "eventId": "e1", "type": "ended", "callId": call_id, "attempt": 1,
        "ended": {"outcome": "finished", "answered": True, "talkSec": 12, **fields},
    }  # fmt: skip


async def test_callbacks_must_be_signed(client_with: Any, fake_bridge: FakeBridge) -> None:
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    created = (await client.post("/api.ashx/v1/calls", json=call_body(),
                                 headers=org.headers)).json()  # fmt: skip
    body, headers = _signed("wrong-secret", _ended(created["callId"]))
    response = await client.post(EVENTS, content=body, headers=headers)
    assert response.status_code == 401
    assert response.json()["error"] == "bad_signature"
    unsigned = await client.post(EVENTS, content=body, headers={"Content-Type": "application/json"})
    assert unsigned.status_code == 401
    assert await events(runtime) == []

    body, headers = _signed(SECRET, _ended(created["callId"]))
    first = await client.post(EVENTS, content=body, headers=headers)
    assert first.json() == {"ok": True, "applied": True}
    again = await client.post(EVENTS, content=body, headers=headers)
    assert again.json() == {"ok": True, "applied": False}
    assert [n for n, _ in await events(runtime)] == ["outbound-ai.finished"]
    record = (await client.get(f"/api.ashx/v1/calls/{created['callId']}",
                               headers=org.headers)).json()  # fmt: skip
    assert (record["status"], record["durationSec"]) == ("ended-success", 12)


async def test_callback_errors(client_with: Any, fake_bridge: FakeBridge) -> None:
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    unknown = _signed(SECRET, _ended("oac-0123456789ab"))
    response = await client.post(EVENTS, content=unknown[0], headers=unknown[1])
    assert (response.status_code, response.json()["error"]) == (404, "not_found")
    bad = _signed(SECRET, {"protocol": 1, "type": "exploded"})
    response = await client.post(EVENTS, content=bad[0], headers=bad[1])
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")
    future = _signed(SECRET, {**_ended("oac-0123456789ab"), "protocol": 2})
    response = await client.post(EVENTS, content=future[0], headers=future[1])
    assert response.status_code == 400

    org = await make_org(runtime, "acme", PRIMARY_HOST)
    created = (await client.post("/api.ashx/v1/calls",
                                 json=call_body(scheduleAtUtc="2026-01-01T12:00:00Z"),
                                 headers=org.headers)).json()  # fmt: skip
    # claimed but not yet marked in flight: the bridge is asked to retry
    from switchboard.platform.calls import repository

    async with runtime.db.transaction() as session:
        await repository.system_claim_due(
            session, now=runtime.clock.now(), owner="w", lease_until=runtime.clock.now(), limit=5
        )
    early = _signed(SECRET, {**_ended(created["callId"]), "type": "answered"})
    response = await client.post(EVENTS, content=early[0], headers=early[1])
    assert (response.status_code, response.json()["error"]) == (409, "not_ready")


async def test_dials_are_idempotent_per_attempt(runtime: Runtime, org: Org) -> None:
    from switchboard.bridge.protocol import DialRequest

    run_in_process(in_process_simulator)  # as an application or a worker process does at start
    bridge = bridge_for(runtime)
    request = DialRequest(
        call_id="oac-00000000abcd", attempt=1, tenant="acme", phone="+14155550101",
        display_name="x", trunk_ids=["t"], voice="Aoede", language="en-US", model="m",
        max_seconds=60, system_prompt="Say hello.", api_key="k",
        callback_url=bridge.callback_url,
    )  # fmt: skip
    first = orjson.loads(await bridge.dial(request))
    second = orjson.loads(await bridge.dial(request))
    assert first == second
    assert first["accepted"] is True
    assert bridge.simulator is not None
    assert bridge.simulator.dials == 1
    await bridge.dial(request.model_copy(update={"attempt": 2}))
    assert bridge.simulator.dials == 2
    status = await bridge.status(call_id=request.call_id, attempt=3)
    assert status.state == "unknown"
    # No call row exists, so the platform refuses these calls' callbacks and the simulator would
    # keep retrying them: the bridge is closed (its calls cancelled) by the autouse fixture.


async def test_simulator_refuses_unsigned_requests(
    app_client: AsyncClient, runtime: Runtime
) -> None:
    health = await app_client.get("/bridge-sim/v1/health")
    assert health.status_code == 200
    assert health.json()["protocol"] == 1
    assert health.json()["registrations"] == {}  # as a real bridge's without registering trunks
    body = orjson.dumps({"callId": "oac-00000000abcd", "attempt": 1})
    refused = await app_client.post("/bridge-sim/v1/calls", content=body)
    assert refused.status_code == 401
    wrong = await app_client.post(
        "/bridge-sim/v1/calls/oac-00000000abcd/status",
        content=body,
        headers={protocol.SIGNATURE_HEADER: protocol.sign("nope", body)},
    )
    assert wrong.status_code == 401
    right = await app_client.post(
        "/bridge-sim/v1/calls/oac-00000000abcd/status",
        content=body,
        headers={protocol.SIGNATURE_HEADER: protocol.sign(bridge_secret(runtime), body)},
    )
    assert right.json()["state"] == "unknown"


async def test_a_restarted_bridge_loses_its_calls_and_reconcile_closes_them(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    from switchboard.kit.clock import ManualClock
    from switchboard.platform.bridging.client import close_bridge

    created = await place(app_client, org.headers, phone="+14155550106", maxSeconds=3600)
    await close_bridge(runtime)  # the bridge process dies with the call
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    clock.advance(runtime.settings.call_lease_seconds + 1)
    assert await tasks.reconcile(runtime, owner="successor") == 1
    record = (await app_client.get(f"/api.ashx/v1/calls/{created['callId']}",
                                   headers=org.headers)).json()  # fmt: skip
    assert record["status"] == "ended-failed-final"
    assert record["errorDetail"] == tasks.LOST_DETAIL
    names = [n for n, _ in await events(runtime, created["callId"])]
    assert names.count("outbound-ai.finished") == 1


@pytest.mark.parametrize("retries", [0, 1])
async def test_technical_failure_retries_while_retries_remain(
    app_client: AsyncClient, runtime: Runtime, org: Org, retries: int
) -> None:
    created = await place(app_client, org.headers, phone="+14155550105", retries=retries)
    await settle(runtime)
    record = (await app_client.get(f"/api.ashx/v1/calls/{created['callId']}",
                                   headers=org.headers)).json()  # fmt: skip
    expected = "ended-failed-retry-pending" if retries else "ended-failed-final"
    assert record["status"] == expected


async def test_the_simulator_host_renews_its_calls_leases(client_with: Any) -> None:
    from switchboard.kit.clock import ManualClock

    runtime, client = await client_with(call_lease_seconds=0.3, sim_speed=1)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    await client.post("/api.ashx/v1/calls", json=call_body(phone="+14155550106"),
                      headers=org.headers)  # fmt: skip
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    clock.advance(5)
    # The keeper renews every lease/3 of real time: wait (briefly) for one beat.
    for _ in range(40):
        await asyncio.sleep(0.05)
        async with runtime.db.transaction() as session:
            row = await session.get(Call, 1)
        assert row is not None
        if row.lease_until is not None and row.lease_until > clock.now():
            break
    assert await tasks.reconcile(runtime, owner="successor") == 0
    async with runtime.db.transaction() as session:
        row = await session.get(Call, 1)
    assert row is not None
    assert (row.status, row.lease_owner) == ("in-flight", tasks.PROCESS_OWNER)


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"outcome": "transferred"}, "outside the glossary: 'transferred'"),
        ({"outcome": "finished", "errorDetail": "AI engine dropped"}, "AI engine dropped"),
        ({"outcome": ""}, "without an outcome"),
    ],
)
async def test_outcomes_stay_inside_the_glossary(
    client_with: Any, fake_bridge: FakeBridge, fields: dict[str, Any], detail: str
) -> None:
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    created = (await client.post("/api.ashx/v1/calls", json=call_body(),
                                 headers=org.headers)).json()  # fmt: skip
    ended = _ended(created["callId"], **fields)
    ended["ended"]["turns"] = [{"speaker": "AI", "text": "Hello.", "ts": "2026-01-01T12:00:00Z"}]
    body, headers = _signed(SECRET, ended)
    assert (await client.post(EVENTS, content=body, headers=headers)).status_code == 200
    record = (await client.get(f"/api.ashx/v1/calls/{created['callId']}",
                               headers=org.headers)).json()  # fmt: skip
    assert (record["status"], record["endedReason"]) == ("ended-failed-final", "")
    assert detail in record["errorDetail"]
    emitted = dict(await events(runtime, created["callId"]))
    finished = emitted["outbound-ai.finished"]
    assert (finished["outcome"], finished["errorDetail"]) == ("", record["errorDetail"])
    assert emitted["transcript.saved"]["outcome"] == ""
    transcript = (await client.get(f"/api.ashx/v1/transcripts/{created['callId']}",
                                   headers=org.headers)).json()  # fmt: skip
    assert (transcript["outcome"], transcript["errorDetail"]) == ("", record["errorDetail"])


async def test_an_inbound_transfer_names_its_target_and_type_as_spec_6_2_does(
    client_with: Any, fake_bridge: FakeBridge
) -> None:
    """``toUser`` for a SIP or extension target, ``toPhone`` for a PSTN one, never both; a
    ``transferType`` from the catalogue's list."""
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    await make_org(runtime, "acme", PRIMARY_HOST)

    async def transferred(call_id: str, **target: str) -> dict[str, Any]:
        base = {"protocol": 1, "tenant": "acme", "source": "vnum", "number": "100",
                "room": f"vnum-100-{call_id[-4:]}", "callId": call_id}  # fmt: skip
        for n, kind in enumerate(("inbound-ai-started", "inbound-transferred")):
            extra = target if kind == "inbound-transferred" else {}
            body, headers = _signed(SECRET, {**base, "eventId": f"{call_id}-{n}", "type": kind,
                                             **extra})  # fmt: skip
            response = await client.post(EVENTS, content=body, headers=headers)
            assert response.json() == {"ok": True, "applied": True}, response.text
        [data] = [d for name, d in await events(runtime, call_id) if name == "call.transferred"]
        return data

    to_pstn = await transferred(
        "vnum-0123456789ab", toPhone="+4930111", transferType="vnum-to-pstn"
    )
    assert to_pstn == {
        "callId": "vnum-0123456789ab", "fromVnum": "100", "toPhone": "+4930111",
        "transferType": "vnum-to-pstn", "room": "vnum-100-89ab", "source": "vnum",
    }  # fmt: skip
    to_user = await transferred("vnum-0123456789cd", toUser="ana")
    assert to_user == {
        "callId": "vnum-0123456789cd", "fromVnum": "100", "toUser": "ana",
        "transferType": "vnum-to-officetab", "room": "vnum-100-89cd", "source": "vnum",
    }  # fmt: skip
    # a transfer type outside spec 6.2's list is refused, and emits nothing
    body, headers = _signed(SECRET, {
        "protocol": 1, "tenant": "acme", "source": "vnum", "number": "100", "eventId": "x-1",
        "callId": "vnum-0123456789ef", "type": "inbound-transferred", "toUser": "ana",
        "transferType": "vnum-to-moon",
    })  # fmt: skip
    refused = await client.post(EVENTS, content=body, headers=headers)
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_request")
    assert await events(runtime, "vnum-0123456789ef") == []


async def test_a_transfer_type_belongs_to_the_calls_direction(
    client_with: Any, fake_bridge: FakeBridge
) -> None:
    """Spec 6.2: ``outbound-to-user`` is an outbound call's transfer, the ``vnum-to-*`` ones an
    inbound call's; the other direction's type is refused and emits nothing."""
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    created = (await client.post("/api.ashx/v1/calls", json=call_body(),
                                 headers=org.headers)).json()  # fmt: skip
    outbound = {
        "protocol": 1, "eventId": "t1", "type": "transferred", "callId": created["callId"],
        "attempt": 1, "toPhone": "+4930111", "transferType": "vnum-to-pstn",
    }  # fmt: skip
    inbound = {
        "protocol": 1, "tenant": "acme", "source": "vnum", "number": "100", "eventId": "t2",
        "callId": "vnum-0123456789ab", "type": "inbound-transferred", "toUser": "ana",
        "transferType": "outbound-to-user",
    }  # fmt: skip
    for payload in (outbound, inbound):
        body, headers = _signed(SECRET, payload)
        refused = await client.post(EVENTS, content=body, headers=headers)
        assert (refused.status_code, refused.json()["error"]) == (400, "invalid_request")
        assert "transferType" in refused.json()["error_description"]
        assert await events(runtime, str(payload["callId"])) == []
