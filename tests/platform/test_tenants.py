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


async def test_a_domain_is_a_host_name_or_a_real_ipv6_literal(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """An address in brackets that is no IPv6 address, or a port out of range, used to reach
    the IdP's client set-up and fail there (500); the document states the rule (decision 0911)."""
    headers = await acme.auth(app_client)
    for number, domain in enumerate(
        ["[debf9ddae5f3ac0df4abfbbb9dfa3ac0]", "a.test:65536", "", "a b.test", "x" * 256]
    ):
        refused = await app_client.post(
            "/api.ashx/v1/tenants", json={"name": f"bad{number}", "domains": [domain]},
            headers=headers,
        )  # fmt: skip
        assert refused.status_code == 400, domain
        assert refused.json()["error"] == "invalid_request"
    domains = ["[2001:DB8::1]:8443", " Six.test. "]
    made = await app_client.post(
        "/api.ashx/v1/tenants", json={"name": "six", "domains": domains}, headers=headers
    )
    assert made.status_code == 201, made.text
    assert made.json()["domains"] == ["[2001:db8::1]:8443", "six.test"]
    listed = (await app_client.get("/api.ashx/v1/tenants", headers=headers)).json()["data"]
    assert [t["name"] for t in listed] == ["acme", "six"]
