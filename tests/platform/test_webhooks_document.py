"""The platform document's ``webhooks`` section (OpenAPI 3.1): one entry per event of the
catalogue, its envelope and payload schemas, its delivery headers and answers (decision 0215).
That real deliveries conform to it: tests/webhooks/test_documented.py."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
import schemathesis
from httpx import AsyncClient

from switchboard.platform.events.catalogue import ALL_EVENTS
from tests.platform.test_operation_ids import CAMEL, operations
from tests.webhooks.documented import body_problems, body_validator, data_schema, operation
from tests.webhooks.samples import sample

SPEC_HEADERS = {"X-Platform-Event", "X-Platform-Signature", "X-Platform-Delivery-Id",
                "X-Platform-Attempt"}  # fmt: skip


async def _document(app_client: AsyncClient) -> dict[str, Any]:
    document: dict[str, Any] = (await app_client.get("/openapi.json")).json()
    return document


async def test_the_document_is_valid_openapi_3_1_with_its_webhooks(
    app_client: AsyncClient,
) -> None:
    document = await _document(app_client)
    assert document["openapi"].startswith("3.1")
    schemathesis.openapi.from_dict(document).validate()  # the OpenAPI 3.1 meta-schema
    broken = {**document, "webhooks": {"call.started": {"post": {"responses": {"2XX": {}}}}}}
    with pytest.raises(jsonschema_rs.ValidationError, match="description"):
        schemathesis.openapi.from_dict(broken).validate()  # the check does check webhooks


async def test_every_event_has_a_webhook_entry_whose_schemas_compile(
    app_client: AsyncClient,
) -> None:
    document = await _document(app_client)
    assert list(document["webhooks"]) == list(ALL_EVENTS)
    schemas = document["components"]["schemas"]
    for event in ALL_EVENTS:
        post = operation(document, event)
        assert set(document["webhooks"][event]) == {"post"}, event
        ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        envelope = schemas[ref.rsplit("/", 1)[-1]]
        assert envelope["required"] == ["event", "tenant", "ts", "data"], event
        assert envelope["additionalProperties"] is False
        assert envelope["properties"]["event"]["const"] == event
        assert envelope["properties"]["ts"]["format"] == "date-time"
        body_validator(document, event)  # compiles
        body = {"event": event, "tenant": "acme", "ts": "2026-01-01T12:00:00Z"}
        assert body_problems(document, event, {**body, "data": sample(event)}) == [], event
        other = "webhook.test" if event != "webhook.test" else "call.started"
        assert body_problems(document, event, {**body, "event": other, "data": sample(event)})


async def test_fields_present_only_in_some_cases_are_optional_never_null_and_say_when(
    app_client: AsyncClient,
) -> None:
    """Spec 6.2's 'only': not required, no null, no default, and a description of the case."""
    document = await _document(app_client)
    for event in ALL_EVENTS:
        schema = data_schema(document, event)
        assert schema["additionalProperties"] is False, event
        for key, field in schema["properties"].items():
            if key in schema["required"]:
                continue
            assert "default" not in field, (event, key)
            assert field.get("type") != "null", (event, key)
            assert "anyOf" not in field, (event, key)
            assert "only" in field["description"], (event, key)
    started = data_schema(document, "call.started")
    assert set(started["required"]) == {"callId", "direction", "source"}
    assert started["properties"]["source"]["enum"] == ["vnum", "ai-live", "outbound-ai"]
    created = data_schema(document, "share.created")
    assert "expiresUtc" in created["required"]  # null when it never expires: sent as null
    assert {"type": "null"} in created["properties"]["expiresUtc"]["anyOf"]


async def test_each_entry_names_its_headers_and_what_its_answers_do(
    app_client: AsyncClient,
) -> None:
    document = await _document(app_client)
    ids = [op["operationId"] for _, _, op in operations(document)]
    for event in ALL_EVENTS:
        post = operation(document, event)
        assert post["summary"], event
        assert post["description"], event
        ids.append(post["operationId"])
        headers = {p["name"]: p for p in post["parameters"]}
        assert set(headers) >= SPEC_HEADERS, event
        assert set(headers) >= {"webhook-id", "webhook-timestamp", "webhook-signature"}
        assert all(p["in"] == "header" and p["required"] for p in headers.values())
        assert headers["X-Platform-Event"]["schema"]["const"] == event
        attempt = headers["X-Platform-Attempt"]["schema"]
        assert (attempt["minimum"], attempt["maximum"]) == (1, 4)
        responses = post["responses"]
        assert set(responses) == {"2XX", "401", "default"}, event
        assert "5 s, 30 s, 120 s" in responses["default"]["description"]
        assert "paused" in responses["default"]["description"]
    assert all(CAMEL.match(i) for i in ids), [i for i in ids if not CAMEL.match(i)]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert operation(document, "outbound-ai.finished")["operationId"] == "outboundAiFinished"
