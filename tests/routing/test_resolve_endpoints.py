"""The dry-run endpoints and the first-match semantics they expose."""

from __future__ import annotations

from httpx import AsyncClient

from tests.factories import TenantFixture

INBOUND = "/api.ashx/v1/inbound-routes"
OUTBOUND = "/api.ashx/v1/outbound-routes"


async def test_outbound_dry_run_names_the_row_its_index_and_why(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    for match, trunks in (("+4930*", ["berlin"]), ("+49*", ["de"]), ("112", ["emergency"])):
        await app_client.post(OUTBOUND, headers=headers, json={"match": match, "trunkIds": trunks})

    async def resolve(number: str) -> dict[str, object]:
        response = await app_client.get(
            f"{OUTBOUND}:resolve", params={"number": number}, headers=headers
        )
        assert response.status_code == 200, response.text
        body: dict[str, object] = response.json()
        return body

    berlin = await resolve("004930555")
    assert berlin["index"] == 0
    assert berlin["normalisedNumber"] == "+4930555"
    assert berlin["route"] == {"match": "+4930*", "trunkIds": ["berlin"]}
    assert berlin["trunkIds"] == ["berlin"]
    assert berlin["matched"] is True
    assert "'+4930*'" in str(berlin["reason"])
    munich = await resolve("+4989555")
    assert (munich["index"], munich["trunkIds"]) == (1, ["de"])
    assert (await resolve("112"))["trunkIds"] == ["emergency"]
    exact_only = await resolve("1120")
    assert exact_only["usedDefault"] is True
    assert exact_only["trunkIds"] == ["default"]
    assert exact_only["route"] is None
    assert exact_only["index"] is None
    space = await resolve(" 4930555")  # an unencoded '+' arrives as a space
    assert space["number"] == "+4930555"
    assert space["index"] == 0

    await app_client.post(OUTBOUND, headers=headers, json={"match": "global", "trunkIds": ["w"]})
    assert (await resolve("+1555"))["trunkIds"] == ["w"]
    missing = await app_client.get(f"{OUTBOUND}:resolve", headers=headers)
    assert missing.status_code == 400


async def test_inbound_dry_run_and_first_match_semantics(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    for row in (
        {"Did": "+4930100", "FromNumber": "+1*", "User": "americas"},
        {"Did": "+4930100", "User": "desk"},
        {"Did": "anonymous", "User": "screening"},
        {"Did": "+4930*", "FromNumber": "anonymous", "User": "anon-berlin"},
        {"Did": "+4930*", "User": "berlin"},
    ):
        response = await app_client.post(INBOUND, headers=headers, json=row)
        assert response.status_code == 201

    async def resolve(did: str, caller: str | None) -> dict[str, object]:
        params = {"did": did} | ({"fromNumber": caller} if caller is not None else {})
        response = await app_client.get(f"{INBOUND}:resolve", params=params, headers=headers)
        assert response.status_code == 200, response.text
        body: dict[str, object] = response.json()
        return body

    americas = await resolve("004930100", "+15551234")
    assert (americas["index"], americas["user"]) == (0, "americas")
    assert americas["route"] == {"did": "+4930100", "fromNumber": "+1*", "user": "americas"}
    assert americas["normalisedDid"] == "+4930100"
    assert "FromNumber '+1*'" in str(americas["reason"])
    assert (await resolve("+4930100", "+4420"))["user"] == "desk"
    anonymous = await resolve("+4930100", None)
    assert (anonymous["index"], anonymous["user"]) == (1, "desk")
    assert anonymous["fromNumber"] == "anonymous"
    assert (await resolve("+4930200", None))["user"] == "screening"
    assert (await resolve("+4930200", ""))["user"] == "screening"
    assert (await resolve("+4930200", "+4940"))["user"] == "berlin"
    fallback = await resolve("+4940", "+4940")
    assert (fallback["index"], fallback["user"]) == (5, "admin")
    assert "catchall" in str(fallback["reason"])


async def test_the_dry_run_needs_an_admin(app_client: AsyncClient, acme: TenantFixture) -> None:
    user = await acme.auth(app_client, "user")
    response = await app_client.get(f"{OUTBOUND}:resolve", params={"number": "1"}, headers=user)
    assert response.status_code == 403
    anonymous = await app_client.get(f"{INBOUND}:resolve", params={"did": "1"})
    assert anonymous.status_code == 401
