"""Idempotency-Key on POST /v1/calls: one call per key and body for 24 hours, per tenant."""

from __future__ import annotations

import asyncio
from typing import Any

from httpx import AsyncClient
from sqlalchemy import text

from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from tests.calls.conftest import Org, make_org
from tests.calls.fakebridge import SECRET, FakeBridge
from tests.calls.helpers import call_body, settle
from tests.conftest import PRIMARY_HOST

CALLS = "/api.ashx/v1/calls"


async def _calls(runtime: Runtime) -> list[str]:
    async with runtime.db.transaction() as session:
        rows = await session.execute(text("SELECT call_id FROM calls ORDER BY id"))
        return [str(call_id) for (call_id,) in rows]


def _keyed(org: Org, key: str) -> dict[str, str]:
    return {**org.headers, "Idempotency-Key": key}


async def test_same_key_and_body_returns_the_first_answer(
    app_client: AsyncClient, runtime: Runtime, org: Org, other_org: Org, clock: ManualClock
) -> None:
    first = await app_client.post(CALLS, json=call_body(), headers=_keyed(org, "order-1"))
    assert first.status_code == 200, first.text
    assert "idempotent-replayed" not in first.headers
    # PascalCase spelling of the same body is the same request
    pascal = {k[0].upper() + k[1:]: v for k, v in call_body().items()}
    for body in (call_body(), pascal):
        again = await app_client.post(CALLS, json=body, headers=_keyed(org, "order-1"))
        assert again.status_code == 200
        assert again.json() == first.json()
        assert again.headers["idempotent-replayed"] == "true"
    assert await _calls(runtime) == [first.json()["callId"]]

    other = await app_client.post(CALLS, json=call_body(retries=2), headers=_keyed(org, "order-1"))
    assert other.status_code == 409
    assert other.json()["error"] == "idempotency_key_reused"
    assert "Idempotency-Key" in other.json()["error_description"]
    assert await _calls(runtime) == [first.json()["callId"]]

    # keys are per tenant
    theirs = await app_client.post(CALLS, json=call_body(), headers=_keyed(other_org, "order-1"))
    assert theirs.status_code == 200
    assert theirs.json()["callId"] != first.json()["callId"]
    assert theirs.json()["tenant"] == "globex"

    # after 24 hours the key is free again
    clock.advance(24 * 3600)
    later = await app_client.post(CALLS, json=call_body(retries=2), headers=_keyed(org, "order-1"))
    assert later.status_code == 200
    assert later.json()["callId"] not in (first.json()["callId"], theirs.json()["callId"])
    assert len(await _calls(runtime)) == 3
    await settle(runtime)


async def test_without_a_key_every_request_is_a_new_call(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    for _ in range(2):
        assert (await app_client.post(CALLS, json=call_body(), headers=org.headers)).is_success
    assert len(await _calls(runtime)) == 2
    await settle(runtime)


async def test_bad_keys_are_refused(app_client: AsyncClient, runtime: Runtime, org: Org) -> None:
    for key in ("", "has space", "x" * 256, "a\x7fb"):
        response = await app_client.post(
            CALLS, json=call_body(), headers={**org.headers, "Idempotency-Key": key}
        )
        assert response.status_code == 400, key
        assert response.json()["error"] == "invalid_request"
        assert "Idempotency-Key" in response.json()["error_description"]
    assert await _calls(runtime) == []


async def test_concurrent_duplicates_place_one_call(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    responses = await asyncio.gather(
        *(app_client.post(CALLS, json=call_body(), headers=_keyed(org, "burst")) for _ in range(8))
    )
    assert [r.status_code for r in responses] == [200] * 8
    assert len({r.json()["callId"] for r in responses}) == 1
    assert sum(1 for r in responses if "idempotent-replayed" not in r.headers) == 1
    assert await _calls(runtime) == [responses[0].json()["callId"]]
    await settle(runtime)


async def test_a_failed_request_leaves_the_key_free(
    client_with: Any, fake_bridge: FakeBridge
) -> None:
    runtime, client = await client_with(bridge_url=fake_bridge.url, bridge_secret=SECRET)
    org = await make_org(runtime, "acme", PRIMARY_HOST)
    fake_bridge.dial_status = 503
    failed = await client.post(CALLS, json=call_body(), headers=_keyed(org, "k-1"))
    assert failed.status_code == 502
    fake_bridge.dial_status = 200
    retried = await client.post(CALLS, json=call_body(), headers=_keyed(org, "k-1"))
    assert retried.status_code == 200
    assert "idempotent-replayed" not in retried.headers
    assert len(fake_bridge.dials) == 2
    assert await _calls(runtime) == [retried.json()["callId"]]


async def test_the_openapi_describes_the_header_and_the_conflict(app_client: AsyncClient) -> None:
    document = (await app_client.get("/openapi.json")).json()
    operation = document["paths"]["/api.ashx/v1/calls"]["post"]
    (header,) = [p for p in operation["parameters"] if p["name"] == "idempotency-key"]
    assert header["in"] == "header"
    assert "24 hours" in header["description"]
    assert "idempotency_key_reused" in operation["responses"]["409"]["description"]
