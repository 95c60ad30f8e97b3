"""Shared request parsing: substring filters take `q` literally, duplicate JSON keys are 400."""

from __future__ import annotations

import pytest
from httpx import AsyncClient

from tests.factories import TenantFixture
from tests.linen.helpers import Portal


async def test_q_matches_percent_and_underscore_literally(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    portal = await Portal.open(app_client, acme)
    for code, name in [("A-1", "50% off"), ("A-2", "500 rooms"), ("A-3", "a_b"), ("A-4", "axb")]:
        await portal.made("/v1/properties", {"code": code, "name": name})
    for q, expected in [("50%", ["A-1"]), ("%", ["A-1"]), ("a_b", ["A-3"]), ("_", ["A-3"])]:
        found = (await portal.get("/v1/properties", q=q)).json()["data"]
        assert [p["code"] for p in found] == expected, q


@pytest.mark.parametrize(
    ("path", "body", "key"),
    [
        ("/api.ashx/v1/api-keys", b'{"name": "a", "name": "b"}', "name"),
        (
            "/api.ashx/v1/calls",
            b'{"phone": "+4930123456", "email": "a@b.test", "systemPrompt": "p",'
            b' "apiKey": "k", "retries": 1, "nested": {"x": 1, "x": 2}}',
            "x",
        ),
        ("/api.ashx/v1/inbound-routes", b'{"Did": "100", "User": "a", "Did": "200"}', "Did"),
        ("/api/v1/groups", b'{"name": "One", "kind": "owner", "kind": "owner"}', "kind"),
    ],
)
async def test_duplicate_json_keys_are_refused_naming_the_key(
    app_client: AsyncClient, acme: TenantFixture, path: str, body: bytes, key: str
) -> None:
    headers = {**await acme.auth(app_client), "Content-Type": "application/json"}
    response = await app_client.post(path, content=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert repr(key) in response.json()["error_description"]
    listed = await app_client.get(path, headers=headers)
    assert listed.status_code == 200
    assert listed.json()["total"] == (1 if path.endswith("inbound-routes") else 0)


async def test_the_same_key_in_sibling_objects_is_no_duplicate(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    world = await (await Portal.open(app_client, acme)).world()
    sheet = await world.sheet()  # two lines, each with its own itemTypeId and qtyOrdered
    assert [line["qtyOrdered"] for line in sheet["lines"]] == [2, 4]


@pytest.mark.parametrize(
    ("path", "body", "description"),
    [
        (
            "/api.ashx/v1/calls",
            {"phone": "+15550100", "email": "a@b.test", "systemPrompt": "p", "apiKey": "k",
             "scheduledForUtc": "2027-06-01T10:00:00Z"},
            "scheduledForUtc: not a field of this request (did you mean scheduleAtUtc?)",
        ),
        ("/api.ashx/v1/api-keys", {"name": "a", "foo": 1}, "foo: not a field of this request"),
        (
            "/api.ashx/v1/inbound-routes",
            {"did": "305", "Did": "306", "user": "admin"},
            "did: given twice, as did and Did",
        ),
        ("/api/v1/groups", {"name": "One", "kind": "owner", "Name": "Two"}, "name: given twice"),
    ],
)  # fmt: skip
async def test_unknown_fields_and_a_field_given_twice_are_refused(
    app_client: AsyncClient, acme: TenantFixture, path: str, body: dict[str, object],
    description: str,
) -> None:  # fmt: skip
    """A typo must not pass for an absent field (a call meant for later would dial now), nor
    one field in two casings for one value (decision 0033); nothing is stored."""
    auth = await acme.auth(app_client)
    refused = await app_client.post(path, json=body, headers=auth)
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_request"
    assert refused.json()["error_description"].startswith(description)
    listed = await app_client.get(path, headers=auth)
    assert listed.json()["total"] == (1 if path.endswith("inbound-routes") else 0)


@pytest.mark.parametrize("body", [b"{bad", b"[1, 2", b'{"a": 1} trailing'])
async def test_a_json_body_that_does_not_parse_is_refused_where_no_body_is_read(
    app_client: AsyncClient, acme: TenantFixture, body: bytes
) -> None:
    """DELETE of an outbound route reads no body: one that says it is JSON and does not parse
    is still refused first (decision 0016), and the route stays."""
    auth = await acme.auth(app_client)
    routes = "/api.ashx/v1/outbound-routes"
    created = await app_client.post(routes, json={"match": "+38*", "trunkIds": ["a"]}, headers=auth)
    assert created.status_code == 201, created.text
    refused = await app_client.request(
        "DELETE", f"{routes}/%2B38%2A", content=body,
        headers={**auth, "Content-Type": "application/json"},
    )  # fmt: skip
    assert refused.status_code == 400
    assert refused.json() == {
        "error": "invalid_request", "error_description": "the request body is not valid JSON"
    }  # fmt: skip
    assert (await app_client.get(f"{routes}/%2B38%2A", headers=auth)).status_code == 200
    emptied = await app_client.request(
        "DELETE",
        f"{routes}/%2B38%2A",
        content=b"",
        headers={**auth, "Content-Type": "application/json"},
    )  # an empty body is no body
    assert emptied.status_code == 200, emptied.text
