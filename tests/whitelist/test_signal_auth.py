"""Who may use the whitelist: an admin bearer of the Host's tenant, or the HMAC signature."""

from __future__ import annotations

import orjson
from httpx import AsyncClient

from switchboard.runtime import Runtime
from tests.factories import TenantFixture, api_key
from tests.whitelist.conftest import sign, signaling_secret

URL = "/signal.ashx"


async def test_signature_over_the_canonical_strings(
    app_client: AsyncClient, acme: TenantFixture, acme_secret: str
) -> None:
    body = orjson.dumps({"number": "+4930111", "comment": "signed"})
    signature = sign(acme_secret, f"whitelist-add|acme|{len(body)}")
    added = await app_client.post(
        URL,
        params={"whitelist": "add"},
        content=body,
        headers={"X-Platform-Admin-Signature": signature},
    )
    assert added.status_code == 200, added.text
    assert added.json()["added"] is True
    listed = await app_client.get(
        URL,
        params={"whitelist": "list"},
        headers={
            "X-Platform-Admin-Signature": "sha256=" + sign(acme_secret, "whitelist-list|acme")
        },
    )
    assert listed.json()["numbers"] == [{"number": "+4930111", "comment": "signed"}]
    write = orjson.dumps({"numbers": [{"number": "+1"}]})
    written = await app_client.post(
        URL,
        params={"whitelist": "write"},
        content=write,
        headers={
            "X-Platform-Admin-Signature": sign(
                acme_secret, f"whitelist-write|acme|{len(write)}"
            ).upper()
        },
    )
    assert written.status_code == 200
    assert written.json()["count"] == 1


async def test_bad_signatures_are_401_and_change_nothing(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, globex: TenantFixture,
    acme_secret: str,
) -> None:  # fmt: skip
    body = orjson.dumps({"number": "+4930111"})
    globex_secret = await signaling_secret(runtime, globex)
    for signature in (
        sign(acme_secret, f"whitelist-add|acme|{len(body) + 1}"),  # wrong body length
        sign(acme_secret, f"whitelist-write|acme|{len(body)}"),  # wrong action
        sign(acme_secret, f"whitelist-add|globex|{len(body)}"),  # wrong tenant
        sign(globex_secret, f"whitelist-add|acme|{len(body)}"),  # another tenant's key
        "sha256=",
        "not hex at all",
    ):
        response = await app_client.post(
            URL,
            params={"whitelist": "add"},
            content=body,
            headers={"X-Platform-Admin-Signature": signature},
        )
        assert response.status_code == 401, signature
        assert response.json()["error"] == "invalid_signature"
    on_globex = await app_client.get(
        URL,
        params={"whitelist": "list"},
        headers={
            "Host": globex.host,
            "X-Platform-Admin-Signature": sign(acme_secret, "whitelist-list|acme"),
        },
    )
    assert on_globex.status_code == 401
    headers = await acme.auth(app_client)
    listed = await app_client.get(URL, params={"whitelist": "list"}, headers=headers)
    assert listed.json()["count"] == 0


async def test_bearers(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> None:
    params = {"whitelist": "list"}
    missing = await app_client.get(URL, params=params)
    assert missing.status_code == 401
    assert missing.json()["error"] == "invalid_token"
    garbage = await app_client.get(URL, params=params, headers={"Authorization": "Bearer nope"})
    assert garbage.status_code == 401
    user = await acme.auth(app_client, "user")
    assert (await app_client.get(URL, params=params, headers=user)).status_code == 403
    globex_admin = {"Authorization": f"Bearer {await api_key(runtime, globex)}"}
    refused = await app_client.get(URL, params=params, headers=globex_admin)  # Host: acme.test
    assert refused.status_code == 403
    refused_add = await app_client.post(
        URL, params={"whitelist": "add"}, headers=globex_admin, json={"number": "+1"}
    )
    assert refused_add.status_code == 403
    own = await app_client.get(URL, params=params, headers={**globex_admin, "Host": globex.host})
    assert own.status_code == 200
    assert own.json() == {"tenant": "globex", "numbers": [], "count": 0}
    acme_key = {"Authorization": f"Bearer {await api_key(runtime, acme)}"}
    assert (await app_client.get(URL, params=params, headers=acme_key)).json()["count"] == 0
    unknown_host = await app_client.get(
        URL, params=params, headers={**acme_key, "Host": "nobody.test"}
    )
    assert unknown_host.status_code == 404


async def test_whitelists_are_tenant_isolated(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> None:
    acme_h = await acme.auth(app_client)
    globex_h = await globex.auth(app_client)
    globex_h["Host"] = globex.host
    await app_client.post(URL, params={"whitelist": "add"}, headers=acme_h, json={"number": "+1"})
    both = await app_client.post(
        URL, params={"whitelist": "add"}, headers=globex_h, json={"number": "+1", "comment": "g"}
    )
    assert (both.json()["added"], both.json()["tenant"]) == (True, "globex")
    await app_client.post(
        URL,
        params={"whitelist": "write", "confirmEmpty": "1"},
        headers=globex_h,
        json={"numbers": []},
    )
    acme_list = await app_client.get(URL, params={"whitelist": "list"}, headers=acme_h)
    assert acme_list.json()["numbers"] == [{"number": "+1", "comment": ""}]
