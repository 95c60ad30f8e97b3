"""Every response of a tour over the platform API is exactly what ``/openapi.json`` says: required
fields present, no null where the document allows none, no undocumented field, enumerated values
within their lists (tests/platform/schema_check.py)."""

from __future__ import annotations

import dataclasses
from typing import Any
from urllib.parse import urlsplit

from httpx import AsyncClient, Response

from switchboard.runtime import Runtime
from tests import factories
from tests.factories import TenantFixture
from tests.numbers.test_numbers import make_number
from tests.platform.schema_check import (
    nullable,
    operation_for,
    problems,
    response_schema,
    response_schemas,
)
from tests.transcripts.helpers import inbound, outbound, save
from tests.webhooks.conftest import subscribe

V1 = "/api.ashx/v1"


@dataclasses.dataclass
class Tour:
    client: AsyncClient
    document: dict[str, Any]
    headers: dict[str, str]
    checked: set[str] = dataclasses.field(default_factory=set)

    async def call(self, method: str, url: str, status: int = 200, **kwargs: Any) -> Any:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        response: Response = await self.client.request(method, url, headers=headers, **kwargs)
        assert response.status_code == status, (method, url, response.text)
        path = urlsplit(url).path
        operation = operation_for(self.document, method.lower(), path)
        schema = response_schema(operation, status)
        body = response.json()
        assert problems(self.document, schema, body, "body") == [], (method, url, body)
        self.checked.add(operation["operationId"])
        return body


async def test_every_response_of_a_tour_is_as_documented(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    document = (await app_client.get("/openapi.json")).json()
    headers = await acme.auth(app_client)
    tour = Tour(app_client, document, headers)

    await tour.call("GET", V1, headers={"Authorization": ""})
    # calls: a scheduled call, cancelled, then hung up again (the no-op answer)
    schedule = {"scheduleAtUtc": "2026-06-01T09:00:00Z"}
    created = await tour.call("POST", f"{V1}/calls", json=_call(**schedule))
    call_id = created["callId"]
    await tour.call("GET", f"{V1}/calls")
    await tour.call("GET", f"{V1}/calls/{call_id}")
    cancelled = await tour.call("POST", f"{V1}/calls/{call_id}/hangup")
    assert "wasNoop" not in cancelled
    again = await tour.call("POST", f"{V1}/calls/{call_id}/hangup")
    assert again["wasNoop"] is True
    await tour.call("GET", f"{V1}/calls", params={"status": "cancelled"})

    # transcripts: one of each direction, the list, each detail, and a share of one
    await save(runtime, acme, outbound("oac-00000000000a"))
    await save(runtime, acme, inbound("vnum-b"))
    listed = await tour.call("GET", f"{V1}/transcripts")
    assert {item["callerSource"] for item in listed["data"]} == {"outbound-ai", "vnum"}
    await tour.call("GET", f"{V1}/transcripts/oac-00000000000a")
    await tour.call("GET", f"{V1}/transcripts/vnum-b")
    share = await tour.call(
        "POST", f"{V1}/transcripts/oac-00000000000a/shares", 201, json={"ttlHours": 0}
    )
    await tour.call("POST", f"{V1}/transcripts/oac-00000000000a/shares", 201, json={"ttlHours": 24})
    await tour.call("GET", f"{V1}/transcripts/oac-00000000000a/shares")
    await tour.call("GET", f"/share/{share['token']}", headers={"Accept": "application/json"})
    await tour.call("DELETE", f"{V1}/shares/{share['id']}")

    # numbers, webhooks, api keys, tenants
    await make_number(runtime, acme, "200")
    await tour.call("GET", f"{V1}/numbers")
    await subscribe(runtime, acme, "https://93.184.215.14/in", ["call.started"])
    await tour.call("GET", f"{V1}/webhooks")
    key = await tour.call("POST", f"{V1}/api-keys", 201, json={"name": "reports"})
    await tour.call("GET", f"{V1}/api-keys")
    await tour.call("DELETE", f"{V1}/api-keys/{key['id']}")
    await tour.call("GET", f"{V1}/tenants")
    await tour.call("POST", f"{V1}/tenants", 201, json={"name": "initech", "domains": ["i.test"]})

    # routing tables, their dry runs
    routes = f"{V1}/inbound-routes"
    await tour.call("POST", routes, 201, json={"Did": "100", "User": "alice"})
    await tour.call("GET", routes)
    await tour.call("GET", f"{routes}/100")
    await tour.call("PUT", f"{routes}/100", json={"User": "bob"})
    await tour.call("GET", f"{routes}:resolve", params={"did": "100"})
    await tour.call("GET", f"{routes}:resolve", params={"did": "555", "fromNumber": "+1"})
    await tour.call("DELETE", f"{routes}/100")
    routes = f"{V1}/outbound-routes"
    await tour.call("POST", routes, 201, json={"match": "+49*", "trunkIds": ["a", "b"]})
    await tour.call("GET", routes)
    await tour.call("GET", f"{routes}/%2B49%2A")
    await tour.call("PUT", f"{routes}/%2B49%2A", json={"trunkIds": ["b"]})
    await tour.call("GET", f"{routes}:resolve", params={"number": "+4930"})
    await tour.call("GET", f"{routes}:resolve", params={"number": "+1"})
    await tour.call("DELETE", f"{routes}/%2B49%2A")

    # the signaling handler: the whitelist and a room's sfu-mode
    signal = "/signal.ashx"
    await tour.call("POST", f"{signal}?whitelist=add", json={"number": "+4930", "comment": "hq"})
    await tour.call("GET", f"{signal}?whitelist=list")
    written = {"numbers": [{"number": "+4930", "comment": ""}]}
    await tour.call("POST", f"{signal}?whitelist=write", json=written)
    await tour.call("POST", f"{signal}?sfu-mode=sfu&room=town-hall", json={"reason": "all hands"})

    # the identity provider's JSON answers
    await tour.call("GET", "/oidc.ashx/.well-known/openid-configuration")
    await tour.call("GET", "/oidc.ashx/userinfo")
    form = {"grant_type": "password", "client_id": "cli", "username": "admin"}
    form |= {"password": factories.PASSWORD, "scope": "openid"}
    await tour.call("POST", "/oidc.ashx/token", data=form, headers={"Authorization": ""})

    assert len(tour.checked) >= 35, sorted(tour.checked)
    # the signed form of the whitelist requests is covered in tests/whitelist


def _call(**extra: Any) -> dict[str, Any]:
    body = {"phone": "+14155550100", "email": "ops@example.com", "systemPrompt": "Be brief."}
    return body | {"apiKey": "AIzaSy-test-key-123456"} | extra


async def test_a_response_field_is_either_sent_as_null_or_left_out(app_client: AsyncClient) -> None:
    """A field the server may leave out is documented as optional and never null; one it sends
    as null is required and nullable. Optional and nullable at once would leave clients to
    handle both, for a server that does only one."""
    document = (await app_client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    names = response_schemas(document)
    assert {"CallRecord", "TranscriptItem", "HangupResult", "WebhookItem"} <= names
    both = [
        f"{name}.{key}"
        for name in sorted(names)
        for key, field in schemas[name].get("properties", {}).items()
        if nullable(field) and key not in schemas[name].get("required", [])
    ]
    assert both == []


async def test_status_like_fields_list_the_spec_values(app_client: AsyncClient) -> None:
    schemas = (await app_client.get("/openapi.json")).json()["components"]["schemas"]

    def enum(name: str, key: str) -> list[str]:
        field = schemas[name]["properties"][key]
        values: list[str] = field.get("items", field)["enum"]
        return values

    statuses = [
        "scheduled", "dispatching", "in-flight", "ended-success", "ended-failed-retry-pending",
        "ended-failed-final", "cancelled",
    ]  # fmt: skip
    assert enum("CallRecord", "status") == enum("HangupResult", "newStatus") == statuses
    outcomes = [
        "finished", "far-hangup", "empty-room", "transferred-to-vnum", "voicemail", "not-now",
        "no-answer", "cancelled", "max-duration",
    ]  # fmt: skip
    for name in ("TranscriptItem", "TranscriptDetailBody", "SharedTranscriptBody"):
        assert enum(name, "outcome") == ["", *outcomes], name
        assert enum(name, "callerSource") == ["outbound-ai", "vnum", "office-tab", "sip"]
    assert enum("CallRecord", "endedReason") == ["", *outcomes]
    assert enum("TurnItem", "speaker") == enum("SharedTurn", "speaker") == ["AI", "Caller"]
    assert enum("NumberItem", "visibility") == ["public", "signed-in"]
    assert enum("SfuModeReply", "mode") == ["mesh", "sfu"]
    events = enum("WebhookItem", "events")
    assert events[0] == "*"
    catalogue = {"call.started", "outbound-ai.finished", "room.client.preference.changed"}
    assert catalogue | {"webhook.test"} <= set(events)
    assert len(events) == 22  # the catalogue's 20 (spec 6.2), webhook.test (6.1) and *
