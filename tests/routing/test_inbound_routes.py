"""``/api.ashx/v1/inbound-routes`` over HTTP."""

from __future__ import annotations

from typing import Any

from httpx import AsyncClient
from sqlalchemy import delete

from switchboard.platform.routing.models import InboundRoute
from switchboard.runtime import Runtime
from tests.factories import TenantFixture

URL = "/api.ashx/v1/inbound-routes"


async def _rows(client: AsyncClient, headers: dict[str, str]) -> list[dict[str, Any]]:
    response = await client.get(URL, headers=headers, params={"limit": 500})
    assert response.status_code == 200, response.text
    rows: list[dict[str, Any]] = response.json()["data"]
    return rows


async def test_a_new_tenant_has_only_the_catchall(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    response = await app_client.get(URL, headers=headers)
    assert response.status_code == 200
    body = response.json()
    assert body == {
        "data": [{"did": "*", "fromNumber": "", "user": "admin"}],
        "total": 1,
        "limit": 50,
        "offset": 0,
        "next": None,
    }


async def test_post_inserts_before_the_catchall_and_echoes_pascal_case(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    first = await app_client.post(URL, headers=headers, json={"Did": "+4930111", "User": "alice"})
    assert first.status_code == 201, first.text
    assert first.json() == {"Did": "+4930111", "FromNumber": "", "User": "alice"}
    second = await app_client.post(
        URL, headers=headers, json={"did": "+4930*", "fromNumber": "+1*", "user": "bob"}
    )
    assert second.status_code == 201
    assert second.json() == {"Did": "+4930*", "FromNumber": "+1*", "User": "bob"}
    assert await _rows(app_client, headers) == [
        {"did": "+4930111", "fromNumber": "", "user": "alice"},
        {"did": "+4930*", "fromNumber": "+1*", "user": "bob"},
        {"did": "*", "fromNumber": "", "user": "admin"},
    ]


async def test_duplicate_pair_is_409_and_changes_nothing(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    await app_client.post(URL, headers=headers, json={"Did": "100", "User": "alice"})
    again = await app_client.post(URL, headers=headers, json={"Did": "100", "User": "mallory"})
    assert again.status_code == 409
    assert again.json()["error"] == "duplicate_route"
    catchall = await app_client.post(URL, headers=headers, json={"Did": "*", "User": "x"})
    assert catchall.status_code == 409
    other_caller = await app_client.post(
        URL, headers=headers, json={"Did": "100", "FromNumber": "200", "User": "carol"}
    )
    assert other_caller.status_code == 201
    assert [r["user"] for r in await _rows(app_client, headers)] == ["alice", "carol", "admin"]


async def test_bad_input_is_400_and_changes_nothing(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    for body in (
        {"User": "alice"},
        {"Did": "100"},
        {"Did": "", "User": "alice"},
        {"Did": 100, "User": "alice"},
        {"Did": "1 00", "User": "alice"},
        {"Did": "1" * 129, "User": "alice"},
        {"Did": "100", "User": ["alice"]},
        {"Did": "100", "FromNumber": 5, "User": "alice"},
        {"Did": "10\u00000", "User": "alice"},
        {"Did": "100", "FromNumber": "+1\u0007", "User": "alice"},
        {"Did": "100", "User": "al\u0000ice"},
        {"Did": "100", "User": " "},  # spaces alone ring nobody
        {"Did": "100", "User": "\u00a0 "},
    ):
        response = await app_client.post(URL, headers=headers, json=body)
        assert response.status_code == 400, body
        assert response.json()["error"] == "invalid_request"
    not_json = await app_client.post(
        URL, headers={**headers, "Content-Type": "application/json"}, content=b"{nope"
    )
    assert not_json.status_code == 400
    assert len(await _rows(app_client, headers)) == 1


async def test_get_one_decodes_the_path_and_returns_the_first_row(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    await app_client.post(
        URL, headers=headers, json={"Did": "+4930*", "FromNumber": "+1*", "User": "bob"}
    )
    await app_client.post(URL, headers=headers, json={"Did": "+4930*", "User": "carol"})
    plus = await app_client.get(f"{URL}/%2B4930%2A", headers=headers)
    assert plus.status_code == 200
    assert plus.json() == {"did": "+4930*", "fromNumber": "+1*", "user": "bob"}
    star = await app_client.get(f"{URL}/%2A", headers=headers)
    assert star.json() == {"did": "*", "fromNumber": "", "user": "admin"}
    missing = await app_client.get(f"{URL}/999", headers=headers)
    assert missing.status_code == 404
    for path in (f"{URL}/1%0A", f"{URL}/%7F"):  # control characters: no row can have them
        assert (await app_client.get(path, headers=headers)).status_code == 404
        assert (await app_client.delete(path, headers=headers)).status_code == 404
    control_caller = await app_client.put(
        f"{URL}/100", params={"fromNumber": "+1\t"}, headers=headers, json={"User": "x"}
    )
    assert control_caller.status_code == 404
    assert missing.json()["error"] == "not_found"


async def test_put_addresses_the_pair_and_edits_only_the_user(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    await app_client.post(URL, headers=headers, json={"Did": "100", "User": "alice"})
    await app_client.post(
        URL, headers=headers, json={"Did": "100", "FromNumber": "+1*", "User": "bob"}
    )
    plain = await app_client.put(
        f"{URL}/100", headers=headers, json={"User": "alice2", "Did": "100", "FromNumber": ""}
    )  # the body may repeat the addressed key
    assert plain.status_code == 200
    assert plain.json() == {"Did": "100", "FromNumber": "", "User": "alice2"}
    for key, value in (("Did", "101"), ("did", "101"), ("FromNumber", "+1*")):
        renamed = await app_client.put(
            f"{URL}/100", headers=headers, json={"User": "mallory", key: value}
        )  # another key names another route: refused, not ignored (decision 0104)
        assert renamed.status_code == 400, key
        assert renamed.json()["error"] == "invalid_request"
        described = renamed.json()["error_description"]
        assert described.startswith(f"{key[0].upper()}{key[1:]}: {value!r} differs"), described
        assert repr("100" if key.lower() == "did" else "") in described
    filtered = await app_client.put(
        f"{URL}/100", params={"fromNumber": "+1*"}, headers=headers, json={"user": "bob2"}
    )
    assert filtered.json() == {"Did": "100", "FromNumber": "+1*", "User": "bob2"}
    unencoded_plus = await app_client.put(  # '+' left unencoded arrives as a space
        f"{URL}/100?fromNumber=+1*", headers=headers, json={"User": "bob3"}
    )
    assert unencoded_plus.json() == {"Did": "100", "FromNumber": "+1*", "User": "bob3"}
    restored = await app_client.put(
        f"{URL}/100", params={"FromNumber": "x", "fromNumber": "+1*"}, headers=headers,
        json={"user": "bob2"},
    )  # fmt: skip
    assert restored.json()["User"] == "bob2"
    missing = await app_client.put(
        f"{URL}/100", params={"fromNumber": "+44*"}, headers=headers, json={"User": "x"}
    )
    assert missing.status_code == 404
    catchall = await app_client.put(f"{URL}/%2A", headers=headers, json={"User": "reception"})
    assert catchall.json() == {"Did": "*", "FromNumber": "", "User": "reception"}
    bad = await app_client.put(f"{URL}/100", headers=headers, json={"User": ""})
    assert bad.status_code == 400
    assert await _rows(app_client, headers) == [
        {"did": "100", "fromNumber": "", "user": "alice2"},
        {"did": "100", "fromNumber": "+1*", "user": "bob2"},
        {"did": "*", "fromNumber": "", "user": "reception"},
    ]


async def test_delete_echoes_the_row_and_protects_the_catchall(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    await app_client.post(URL, headers=headers, json={"Did": "+4930*", "User": "alice"})
    await app_client.post(
        URL, headers=headers, json={"Did": "*", "FromNumber": "anonymous", "User": "screen"}
    )
    star = await app_client.delete(f"{URL}/%2A", headers=headers)
    assert star.status_code == 400
    assert star.json()["error"] == "cannot_delete_catchall"
    deleted = await app_client.delete(f"{URL}/%2B4930%2A", headers=headers)
    assert deleted.status_code == 200
    assert deleted.json() == {"deleted": {"Did": "+4930*", "FromNumber": "", "User": "alice"}}
    again = await app_client.delete(f"{URL}/%2B4930%2A", headers=headers)
    assert again.status_code == 404
    assert again.json()["error"] == "not_found"
    filtered = await app_client.delete(
        f"{URL}/%2A", params={"fromNumber": "anonymous"}, headers=headers
    )
    assert filtered.json() == {"deleted": {"Did": "*", "FromNumber": "anonymous", "User": "screen"}}
    assert await _rows(app_client, headers) == [{"did": "*", "fromNumber": "", "user": "admin"}]


async def test_the_catchall_is_reinserted_when_missing(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    await app_client.post(URL, headers=headers, json={"Did": "100", "User": "alice"})
    async with runtime.db.transaction() as session:  # an operator's manual SQL
        await session.execute(delete(InboundRoute).where(InboundRoute.did == "*"))
    assert await _rows(app_client, headers) == [
        {"did": "100", "fromNumber": "", "user": "alice"},
        {"did": "*", "fromNumber": "", "user": "admin"},
    ]


async def test_legacy_duplicates_put_and_delete_act_on_the_first(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    await app_client.get(URL, headers=headers)
    async with runtime.db.transaction() as session:  # rows carried over from an older system
        session.add(InboundRoute(tenant_id=acme.id, position=10, did="100", user="first"))
        session.add(InboundRoute(tenant_id=acme.id, position=11, did="100", user="second"))
    put = await app_client.put(f"{URL}/100", headers=headers, json={"User": "first2"})
    assert put.json()["User"] == "first2"
    assert [r["user"] for r in await _rows(app_client, headers)] == ["first2", "second", "admin"]
    deleted = await app_client.delete(f"{URL}/100", headers=headers)
    assert deleted.json()["deleted"]["User"] == "first2"
    assert [r["user"] for r in await _rows(app_client, headers)] == ["second", "admin"]


async def test_paging_keeps_evaluation_order(app_client: AsyncClient, acme: TenantFixture) -> None:
    headers = await acme.auth(app_client)
    for n in range(5):
        await app_client.post(URL, headers=headers, json={"Did": f"10{n}", "User": f"u{n}"})
    page = await app_client.get(URL, headers=headers, params={"limit": 2, "offset": 2})
    body = page.json()
    assert [r["did"] for r in body["data"]] == ["102", "103"]
    assert body["total"] == 6
    assert body["next"] == f"{URL}?limit=2&offset=4"
    last = await app_client.get(URL, headers=headers, params={"limit": 2, "offset": 4})
    assert [r["did"] for r in last.json()["data"]] == ["104", "*"]
    assert last.json()["next"] is None
    too_big = await app_client.get(URL, headers=headers, params={"limit": 501})
    assert too_big.status_code == 400


async def test_auth_is_required_and_needs_admin(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    assert (await app_client.get(URL)).status_code == 401
    user = await acme.auth(app_client, "user")
    assert (await app_client.get(URL, headers=user)).status_code == 403
    post = await app_client.post(URL, headers=user, json={"Did": "1", "User": "x"})
    assert post.status_code == 403
