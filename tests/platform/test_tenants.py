"""Super-admin gating: only admins of the primary tenant administer tenants."""

from __future__ import annotations

from httpx import AsyncClient

from tests.factories import TenantFixture


async def test_super_admin_lists_and_creates_tenants(
    app_client: AsyncClient, acme: TenantFixture, globex: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    listed = await app_client.get("/api.ashx/v1/tenants", headers=headers)
    assert listed.status_code == 200
    assert [(t["name"], t["primary"]) for t in listed.json()["data"]] == [
        ("acme", True),
        ("globex", False),
    ]
    created = await app_client.post(
        "/api.ashx/v1/tenants",
        json={"name": "initech", "domains": ["Initech.test"]},
        headers=headers,
    )
    assert created.status_code == 201
    assert created.json()["domains"] == ["initech.test"]
    again = await app_client.post(
        "/api.ashx/v1/tenants", json={"name": "other", "domains": ["initech.test"]}, headers=headers
    )
    assert (again.status_code, again.json()["error"]) == (409, "duplicate_domain")


async def test_admins_of_other_tenants_are_not_super_admins(
    app_client: AsyncClient, acme: TenantFixture, globex: TenantFixture
) -> None:
    headers = await globex.auth(app_client)
    assert (await app_client.get("/api.ashx/v1/tenants", headers=headers)).status_code == 403
    created = await app_client.post(
        "/api.ashx/v1/tenants", json={"name": "x", "domains": ["x.test"]}, headers=headers
    )
    assert created.status_code == 403
    power = await acme.auth(app_client, "power")
    assert (await app_client.get("/api.ashx/v1/tenants", headers=power)).status_code == 403
