"""``/signal.ashx?whitelist=list|add|write`` over HTTP."""

from __future__ import annotations

from typing import Any

import orjson
from httpx import AsyncClient, Response
from sqlalchemy import update

from switchboard.platform.whitelist.models import Whitelist
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.whitelist.conftest import sign

URL = "/signal.ashx"


async def _list(client: AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    response = await client.get(URL, params={"whitelist": "list"}, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _add(client: AsyncClient, headers: dict[str, str], body: Any) -> Response:
    return await client.post(URL, params={"whitelist": "add"}, headers=headers, json=body)


async def test_add_and_list_in_typed_order(app_client: AsyncClient, acme: TenantFixture) -> None:
    headers = await acme.auth(app_client)
    assert await _list(app_client, headers) == {"tenant": "acme", "numbers": [], "count": 0}
    first = await _add(app_client, headers, {"number": "+4930111", "comment": "office"})
    assert first.status_code == 200
    assert first.json() == {
        "ok": True,
        "tenant": "acme",
        "number": "+4930111",
        "comment": "office",
        "added": True,
        "count": 1,
    }
    await _add(app_client, headers, {"Number": "0049402", "Comment": "hamburg"})
    await _add(app_client, headers, {"number": "+1555"})
    again = await _add(app_client, headers, {"number": "+4930111", "comment": "front desk"})
    assert again.json()["added"] is False
    assert again.json()["comment"] == "front desk"
    assert again.json()["count"] == 3
    kept = await _add(app_client, headers, {"number": "+4930111"})
    assert (kept.json()["added"], kept.json()["comment"]) == (False, "front desk")
    long = await _add(app_client, headers, {"number": "9" * 32, "comment": "x" * 250})
    assert long.status_code == 200
    assert long.json()["comment"] == "x" * 200
    assert await _list(app_client, headers) == {
        "tenant": "acme",
        "numbers": [
            {"number": "+4930111", "comment": "front desk"},
            {"number": "0049402", "comment": "hamburg"},
            {"number": "+1555", "comment": ""},
            {"number": "9" * 32, "comment": "x" * 200},
        ],
        "count": 4,
    }


async def test_bad_input_is_400_and_changes_nothing(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    await _add(app_client, headers, {"number": "+4930111", "comment": "office"})
    for body in (
        {},
        {"comment": "no number"},
        {"number": ""},
        {"number": "1" * 33},
        {"number": 4930111},
        {"number": ["+4930111"]},
        {"number": "+4930111", "comment": 5},
        ["+4930111"],
        "+4930111",
    ):
        response = await _add(app_client, headers, body)
        assert response.status_code == 400, body
        assert response.json()["error"] == "invalid_request"
    for raw in (b"{not json", b"", b"\xff\xfe"):
        response = await app_client.post(
            URL, params={"whitelist": "add"}, headers=headers, content=raw
        )
        assert response.status_code == 400
        assert set(response.json()) == {"error", "error_description"}
    for params in ({"whitelist": "remove"}, {}, {"whitelist": ""}):
        response = await app_client.post(URL, params=params, headers=headers, json={"number": "1"})
        assert response.status_code == 400, params
        assert (await app_client.get(URL, params=params, headers=headers)).status_code == 400
    huge = await app_client.post(
        URL,
        params={"whitelist": "write"},
        headers=headers,
        content=orjson.dumps({"numbers": [{"number": "+1", "comment": "x" * 4_200_000}]}),
    )
    assert huge.status_code == 413
    too_many = await app_client.post(
        URL,
        params={"whitelist": "write"},
        headers=headers,
        json={"numbers": [{"number": str(n)} for n in range(10_001)]},
    )
    assert too_many.status_code == 400
    wrong_method = await app_client.get(URL, params={"whitelist": "add"}, headers=headers)
    assert (wrong_method.status_code, wrong_method.headers["allow"]) == (405, "POST")
    post_list = await app_client.post(URL, params={"whitelist": "list"}, headers=headers)
    assert post_list.status_code == 405
    for refused in (
        {"numbers": [{"number": "1" * 33}]},
        {"numbers": [{"comment": "x"}]},
        {"numbers": "+49"},
        {"numbers": ["+49"]},
        {},
    ):
        response = await app_client.post(
            URL, params={"whitelist": "write"}, headers=headers, json=refused
        )
        assert response.status_code == 400, refused
    assert (await _list(app_client, headers))["numbers"] == [
        {"number": "+4930111", "comment": "office"}
    ]


async def test_write_replaces_the_list_and_an_empty_write_needs_confirmation(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    await _add(app_client, headers, {"number": "+4930111", "comment": "office"})
    written = await app_client.post(
        URL,
        params={"whitelist": "write"},
        headers=headers,
        json={
            "numbers": [
                {"number": "+1555", "comment": "us"},
                {"number": "+4420"},
                {"number": "+1555", "comment": "us office"},
                {"number": "+33", "comment": "y" * 300},
            ]
        },
    )
    assert written.status_code == 200
    assert written.json() == {"ok": True, "tenant": "acme", "count": 3}
    assert (await _list(app_client, headers))["numbers"] == [
        {"number": "+1555", "comment": "us office"},
        {"number": "+4420", "comment": ""},
        {"number": "+33", "comment": "y" * 200},
    ]
    refused = await app_client.post(
        URL, params={"whitelist": "write"}, headers=headers, json={"numbers": []}
    )
    assert refused.status_code == 400
    assert refused.json()["error"] == "confirmation_required"
    for unconfirmed in ("0", "", "yes", "True"):
        not_confirmed = await app_client.post(
            URL,
            params={"whitelist": "write", "confirmEmpty": unconfirmed},
            headers=headers,
            json={"numbers": []},
        )
        assert not_confirmed.json()["error"] == "confirmation_required", unconfirmed
    assert (await _list(app_client, headers))["count"] == 3
    emptied = await app_client.post(
        URL,
        params={"whitelist": "write", "confirmEmpty": "1"},
        headers=headers,
        json={"numbers": []},
    )
    assert emptied.json()["count"] == 0
    assert (await _list(app_client, headers))["numbers"] == []
    await _add(app_client, headers, {"number": "+1555"})
    also = await app_client.post(
        URL,
        params={"whitelist": "write", "confirmEmpty": "true"},
        headers=headers,
        json={"numbers": []},
    )
    assert also.json()["count"] == 0  # `true` confirms too (docs/whitelist.md)


async def test_list_is_the_union_with_extra_comment_keys(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    await _add(app_client, headers, {"number": "+4930111", "comment": "office"})
    async with runtime.db.transaction() as session:  # a list carried over from an older system
        await session.execute(
            update(Whitelist)
            .where(Whitelist.tenant_id == acme.id)
            .values(
                numbers=["+4930111", "+4420"],
                comments={"+4930111": "office", "+9999": "legacy z", "+1111": "legacy a"},
            )
        )
    body = await _list(app_client, headers)
    assert body["numbers"] == [
        {"number": "+4930111", "comment": "office"},
        {"number": "+4420", "comment": ""},
        {"number": "+9999", "comment": "legacy z"},
        {"number": "+1111", "comment": "legacy a"},
    ]
    assert body["count"] == 4
    legacy = await _add(app_client, headers, {"number": "+9999", "comment": "kept"})
    assert (legacy.json()["added"], legacy.json()["count"]) == (False, 4)
    fresh = await _add(app_client, headers, {"number": "+5"})
    assert (fresh.json()["added"], fresh.json()["count"]) == (True, 5)
    order = [n["number"] for n in (await _list(app_client, headers))["numbers"]]
    assert order == ["+4930111", "+4420", "+5", "+9999", "+1111"]


async def test_raw_body_is_what_counts(app_client: AsyncClient, acme: TenantFixture) -> None:
    headers = await acme.auth(app_client)
    nul = orjson.dumps({"number": "+49 30 111", "comment": "\u0000"})
    refused = await app_client.post(URL, params={"whitelist": "add"}, headers=headers, content=nul)
    assert refused.status_code == 400  # no database stores a NUL
    raw = orjson.dumps({"number": "+49 30 111", "comment": "ü" * 201})
    response = await app_client.post(URL, params={"whitelist": "add"}, headers=headers, content=raw)
    assert response.status_code == 200
    assert response.json()["comment"] == "ü" * 200


async def test_a_key_named_twice_is_refused_under_any_media_type(
    app_client: AsyncClient, acme: TenantFixture, acme_secret: str
) -> None:
    """``curl -d`` sends the JSON as a form: it is read as JSON, so it is held to JSON's rules
    (decisions 0016 and 0212), before any credential is looked at."""
    headers = await acme.auth(app_client)
    await _add(app_client, headers, {"number": "+4930111", "comment": "office"})
    add = b'{"number":"+4930111","comment":"office","number":"+1900"}'
    write = b'{"numbers":[{"number":"+1555","comment":"us","comment":"uk"}]}'
    for action, raw in (("add", add), ("write", write)):
        signature = sign(acme_secret, f"whitelist-{action}|acme|{len(raw)}")
        for media_type in ("application/x-www-form-urlencoded", "text/plain", None):
            for credentials in (headers, {"X-Platform-Admin-Signature": signature}, {}):
                sent = {**credentials, **({"Content-Type": media_type} if media_type else {})}
                response = await app_client.post(
                    URL, params={"whitelist": action}, headers=sent, content=raw
                )
                assert response.status_code == 400, (action, media_type, response.text)
                assert response.json()["error"] == "invalid_request"
                assert "more than once" in response.json()["error_description"]
    assert (await _list(app_client, headers))["numbers"] == [
        {"number": "+4930111", "comment": "office"}
    ]
    # no body at all is no malformed body: without credentials it is 401, with them 400
    for action in ("add", "write"):
        bare = await app_client.post(URL, params={"whitelist": action})
        assert (bare.status_code, bare.json()["error"]) == (401, "invalid_token")
        empty = await app_client.post(URL, params={"whitelist": action}, headers=headers)
        assert (empty.status_code, empty.json()["error"]) == (400, "invalid_request")


async def test_a_refusal_names_the_input_as_sent(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """``name: what is wrong`` (decision 0214): in a write of thousands of numbers, which one."""
    headers = await acme.auth(app_client)
    cases: list[tuple[dict[str, str], Any, str]] = [
        ({"whitelist": "add"}, {"number": "1" * 33}, "number: must be 1 to 32 characters"),
        ({"whitelist": "add"}, {"number": "  "}, "number: must be 1 to 32 characters"),
        ({"whitelist": "add"}, {"Number": "+49\u0007"}, "number: must not contain control"),
        ({"whitelist": "add"}, ["+4930111"], "body: must be a JSON object"),
        (
            {"whitelist": "write"},
            {"numbers": [{"number": "+1"}, {"number": "+2"}, {"number": ""}]},
            "numbers.2.number: must be 1 to 32 characters",
        ),
        (
            {"whitelist": "write"},
            {"numbers": [{"number": "+1"}, {"number": "+2\u0007 3"}]},
            "numbers.1.number: must not contain control",
        ),
        ({"whitelist": "remove"}, {"number": "+1"}, "whitelist: unknown action 'remove'"),
        ({}, {"number": "+1"}, "whitelist: required"),
    ]
    for params, body, described in cases:
        response = await app_client.post(URL, params=params, headers=headers, json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"] == "invalid_request"
        assert response.json()["error_description"].startswith(described), response.text
    assert await _list(app_client, headers) == {"tenant": "acme", "numbers": [], "count": 0}
