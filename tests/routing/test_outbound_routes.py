"""``/api.ashx/v1/outbound-routes`` over HTTP."""

from __future__ import annotations

from httpx import AsyncClient

from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.factories import TenantFixture

URL = "/api.ashx/v1/outbound-routes"


async def test_crud_in_order_with_the_default_trunk(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    empty = await app_client.get(URL, headers=headers)
    assert empty.json() == {
        "data": [],
        "total": 0,
        "limit": 50,
        "offset": 0,
        "next": None,
        "defaultTrunkId": "default",
    }
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await tenants.set_setting(session, tenant, "DefaultTrunkId", "sip-main")
    created = await app_client.post(
        URL, headers=headers, json={"match": "+4930*", "trunkIds": ["berlin", "de"]}
    )
    assert created.status_code == 201
    assert created.json() == {"match": "+4930*", "trunkIds": ["berlin", "de"]}
    await app_client.post(URL, headers=headers, json={"Match": "+49*", "TrunkIds": ["de"]})
    await app_client.post(URL, headers=headers, json={"match": "global", "trunkIds": ["intl"]})
    listed = await app_client.get(URL, headers=headers)
    assert listed.json()["data"] == [
        {"match": "+4930*", "trunkIds": ["berlin", "de"]},
        {"match": "+49*", "trunkIds": ["de"]},
        {"match": "global", "trunkIds": ["intl"]},
    ]
    assert listed.json()["defaultTrunkId"] == "sip-main"

    one = await app_client.get(f"{URL}/%2B49%2A", headers=headers)
    assert one.json() == {"match": "+49*", "trunkIds": ["de"]}
    updated = await app_client.put(
        f"{URL}/%2B49%2A", headers=headers, json={"trunkIds": ["de-2", "de"]}
    )
    assert updated.status_code == 200
    assert updated.json() == {"match": "+49*", "trunkIds": ["de-2", "de"]}
    deleted = await app_client.delete(f"{URL}/%2B4930%2A", headers=headers)
    assert deleted.json() == {"deleted": {"match": "+4930*", "trunkIds": ["berlin", "de"]}}
    after = await app_client.get(URL, headers=headers)
    assert [r["match"] for r in after.json()["data"]] == ["+49*", "global"]
    appended = await app_client.post(URL, headers=headers, json={"match": "1*", "trunkIds": ["us"]})
    assert appended.status_code == 201
    final = await app_client.get(URL, headers=headers)
    assert [r["match"] for r in final.json()["data"]] == ["+49*", "global", "1*"]


async def test_conflicts_misses_and_bad_input(app_client: AsyncClient, acme: TenantFixture) -> None:
    headers = await acme.auth(app_client)
    await app_client.post(URL, headers=headers, json={"match": "+49*", "trunkIds": ["de"]})
    duplicate = await app_client.post(
        URL, headers=headers, json={"match": "+49*", "trunkIds": ["other"]}
    )
    assert duplicate.status_code == 409
    assert duplicate.json()["error"] == "duplicate_route"
    for path, method in (("%2B44%2A", "get"), ("%2B44%2A", "delete")):
        missing = await app_client.request(method, f"{URL}/{path}", headers=headers)
        assert missing.status_code == 404
        assert missing.json()["error"] == "not_found"
    put_missing = await app_client.put(f"{URL}/%2B44%2A", headers=headers, json={"trunkIds": ["x"]})
    assert put_missing.status_code == 404
    control = await app_client.put(f"{URL}/%1B", headers=headers, json={"trunkIds": ["x"]})
    assert control.status_code == 404
    for body in (
        {"trunkIds": ["de"]},
        {"match": "+1*"},
        {"match": "+1*", "trunkIds": []},
        {"match": "+1*", "trunkIds": "de"},
        {"match": "+1*", "trunkIds": [""]},
        {"match": "+1*", "trunkIds": [7]},
        {"match": "", "trunkIds": ["de"]},
        {"match": 1, "trunkIds": ["de"]},
        {"match": "+1\u0000*", "trunkIds": ["de"]},
        {"match": "+1*", "trunkIds": ["d\u0000e"]},
        {"match": "+1*", "trunkIds": ["de", "at", "de"]},  # one call would try "de" twice
    ):
        response = await app_client.post(URL, headers=headers, json=body)
        assert response.status_code == 400, body
    twice = await app_client.put(f"{URL}/%2B49%2A", headers=headers, json={"trunkIds": ["a", "a"]})
    assert twice.json() == {
        "error": "invalid_request",
        "error_description": "trunkIds: 'a' is listed twice",
    }
    rename = await app_client.put(
        f"{URL}/%2B49%2A", headers=headers, json={"match": "+48*", "trunkIds": ["x"]}
    )
    assert rename.status_code == 400
    bad_put = await app_client.put(f"{URL}/%2B49%2A", headers=headers, json={"trunkIds": []})
    assert bad_put.status_code == 400
    listed = await app_client.get(URL, headers=headers)
    assert listed.json()["data"] == [{"match": "+49*", "trunkIds": ["de"]}]
