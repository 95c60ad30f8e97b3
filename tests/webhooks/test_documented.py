"""Events are what the OpenAPI document's ``webhooks`` section says (decision 0215): ``emit``
takes exactly the payloads the document describes and refuses the rest, writing nothing, and
real deliveries of a call, a share and a test, received by a real server, conform to the
document, body and headers."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from httpx import AsyncClient
from sqlalchemy import func, select

from switchboard.cli import main
from switchboard.platform.bridging.client import close_bridge
from switchboard.platform.events.catalogue import ALL_EVENTS
from switchboard.platform.events.models import Event
from switchboard.platform.events.payloads import PayloadMismatch
from switchboard.platform.webhooks.outbox import emit
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.calls.helpers import place, settle
from tests.factories import TenantFixture
from tests.webhooks.conftest import Receiver, deliver_until, subscribe
from tests.webhooks.documented import body_problems, data_schema, header_problems
from tests.webhooks.samples import sample

V1 = "/api.ashx/v1"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"sim_speed": 2000})  # the simulated calls, fast


@pytest.fixture
async def document(app_client: AsyncClient) -> dict[str, Any]:
    found: dict[str, Any] = (await app_client.get("/openapi.json")).json()
    return found


async def _emit(runtime: Runtime, tenant: TenantFixture, event: str, data: Any) -> None:
    async with runtime.db.transaction() as session:
        await emit(
            session, tenant_id=tenant.id, tenant_name=tenant.name, event=event, data=data,
            clock=runtime.clock,
        )  # fmt: skip


async def _emits(runtime: Runtime, tenant: TenantFixture, event: str, data: Any) -> bool:
    """Whether ``emit`` takes ``data`` as ``event``'s payload (and commits it)."""
    try:
        await _emit(runtime, tenant, event, data)
    except PayloadMismatch:
        return False
    return True


def _kinds(schema: dict[str, Any]) -> set[str]:
    return {schema.get("type", "object")} | {b.get("type") for b in schema.get("anyOf", [])}


def _variants(event: str, schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The sample payload, and for each documented field: without it, null, of another JSON
    type, outside its values; and with a field the catalogue does not list."""
    base = sample(event)
    found = [("as sent", base), ("with an unknown field", sample(event, note="x"))]
    for key, field in schema["properties"].items():
        without = {k: v for k, v in base.items() if k != key}
        found += [
            (f"without {key}", without),
            (f"{key} null", {**base, key: None}),
            (f"{key} of another type", {**base, key: 0 if "string" in _kinds(field) else "0"}),
        ]
        if "enum" in field or "const" in field:
            found.append((f"{key} outside its values", {**base, key: "nope"}))
    return found


async def test_emit_takes_exactly_the_documented_payloads(
    runtime: Runtime, org: TenantFixture, document: dict[str, Any]
) -> None:
    """For every event, a payload is emitted exactly when its envelope matches the document;
    a refused one writes nothing. A required field missing, an 'only' field sent as null, an
    unknown field, a wrong type or a value outside a list is refused."""
    accepted = 0
    for event in ALL_EVENTS:
        schema = data_schema(document, event)
        required = set(schema["required"])
        assert required, event
        for label, data in _variants(event, schema):
            body = {"event": event, "tenant": org.name, "ts": "2026-01-01T12:00:00Z", "data": data}
            documented = body_problems(document, event, body) == []
            emitted = await _emits(runtime, org, event, data)
            assert emitted == documented, (event, label, data)
            key = label.split(" ")[-1]
            if label == "as sent" or (label.startswith("without ") and key not in required):
                assert emitted, (event, label)
            if label.startswith("without ") and key in required:
                assert not emitted, (event, label)
            if label.endswith(" null"):
                nullable = "null" in _kinds(schema["properties"][label.split(" ")[0]])
                assert emitted == nullable, (event, label)
            accepted += emitted
        with pytest.raises(PayloadMismatch, match=rf"^{re.escape(event)}: note: Extra inputs"):
            await _emit(runtime, org, event, {**sample(event), "note": "x"})
    async with runtime.db.transaction() as session:
        assert await session.scalar(select(func.count()).select_from(Event)) == accepted


async def test_an_unknown_event_is_refused(runtime: Runtime, org: TenantFixture) -> None:
    with pytest.raises(PayloadMismatch, match=r"^unknown event 'call\.exploded'$"):
        await _emit(runtime, org, "call.exploded", sample("call.started"))


@pytest.fixture
async def bridge(runtime: Runtime) -> AsyncIterator[None]:
    yield
    await close_bridge(runtime)


async def test_deliveries_of_a_call_a_share_and_a_test_are_as_documented(
    app_client: AsyncClient,
    runtime: Runtime,
    acme: TenantFixture,
    receiver: Receiver,
    cli: CliRunner,
    document: dict[str, Any],
    bridge: None,
) -> None:
    sub_id, _ = await subscribe(runtime, acme, receiver.url("/hook"))
    headers = {"Authorization": f"Bearer {await factories.api_key(runtime, acme)}"}
    # a call through the simulated bridge: answered, started, finished, its transcript saved
    call_id = (await place(app_client, headers))["callId"]
    await settle(runtime)
    # its transcript shared, the share opened, then revoked
    created = await app_client.post(
        f"{V1}/transcripts/{call_id}/shares", json={"ttlHours": 24}, headers=headers
    )
    assert created.status_code == 201, created.text
    share = created.json()
    opened = await app_client.get(f"/share/{share['token']}", headers={"Accept": "text/html"})
    assert opened.status_code == 200
    revoked = await app_client.delete(f"{V1}/shares/{share['id']}", headers=headers)
    assert revoked.status_code == 200, revoked.text
    # a test delivery, as an operator queues it
    queued = await asyncio.to_thread(
        cli.invoke, main, ["webhook", "test", "--tenant", acme.name, sub_id]
    )
    assert queued.exit_code == 0, queued.output

    expected = {
        "call.answered", "call.started", "outbound-ai.finished", "transcript.saved",
        "share.created", "share.viewed", "share.revoked", "webhook.test",
    }  # fmt: skip
    bodies = await deliver_until(
        runtime, receiver, lambda bodies: {b["event"] for b in bodies} >= expected
    )
    assert {b["event"] for b in bodies} == expected
    for request in receiver.requests:
        event = request.headers["X-Platform-Event"]
        body = orjson.loads(request.body)
        assert body_problems(document, event, body) == [], (event, body)
        assert header_problems(document, event, request.headers) == [], (event, request.headers)
