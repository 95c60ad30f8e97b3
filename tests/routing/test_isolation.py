"""Two tenants with overlapping DIDs and matches never see each other's rows."""

from __future__ import annotations

from httpx import AsyncClient

from switchboard.platform.routing import service as routing
from switchboard.runtime import Runtime
from tests.factories import TenantFixture, api_key

INBOUND = "/api.ashx/v1/inbound-routes"
OUTBOUND = "/api.ashx/v1/outbound-routes"


async def test_routes_are_tenant_isolated(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> None:
    a = await acme.auth(app_client)
    g = {"Authorization": f"Bearer {await api_key(runtime, globex)}", "Host": globex.host}
    assert (
        await app_client.post(INBOUND, headers=a, json={"Did": "100", "User": "acme-desk"})
    ).status_code == 201
    assert (
        await app_client.post(INBOUND, headers=g, json={"Did": "100", "User": "globex-desk"})
    ).status_code == 201
    await app_client.post(OUTBOUND, headers=a, json={"match": "+49*", "trunkIds": ["acme-de"]})
    only_acme = await app_client.post(
        OUTBOUND, headers=a, json={"match": "+33*", "trunkIds": ["acme-fr"]}
    )
    assert only_acme.status_code == 201
    assert (
        await app_client.post(OUTBOUND, headers=g, json={"match": "+49*", "trunkIds": ["g-de"]})
    ).status_code == 201

    assert (await app_client.get(f"{INBOUND}/100", headers=g)).json()["user"] == "globex-desk"
    assert (await app_client.get(f"{OUTBOUND}/%2B33%2A", headers=g)).status_code == 404
    assert (
        await app_client.put(f"{OUTBOUND}/%2B33%2A", headers=g, json={"trunkIds": ["x"]})
    ).status_code == 404
    assert (await app_client.delete(f"{OUTBOUND}/%2B33%2A", headers=g)).status_code == 404
    g_rows = (await app_client.get(INBOUND, headers=g)).json()["data"]
    assert [r["user"] for r in g_rows] == ["globex-desk", "admin"]
    deleted = await app_client.delete(f"{INBOUND}/100", headers=g)
    assert deleted.json()["deleted"]["User"] == "globex-desk"
    assert (await app_client.get(f"{INBOUND}/100", headers=a)).json()["user"] == "acme-desk"
    assert (
        await app_client.put(f"{INBOUND}/100", headers=g, json={"User": "x"})
    ).status_code == 404

    async with runtime.db.transaction() as session:
        assert await routing.resolve_outbound(
            session, tenant_id=acme.id, number="+4930", default_trunk_id="d"
        ) == ["acme-de"]
        assert await routing.resolve_outbound(
            session, tenant_id=globex.id, number="+4930", default_trunk_id="d"
        ) == ["g-de"]
        assert await routing.resolve_outbound(
            session, tenant_id=globex.id, number="+3312", default_trunk_id="d"
        ) == ["d"]
        assert (
            await routing.resolve_inbound(session, tenant_id=acme.id, did="100", from_number="+1")
            == "acme-desk"
        )
        assert (
            await routing.resolve_inbound(session, tenant_id=globex.id, did="100", from_number="+1")
            == "admin"
        )
    g_dry = await app_client.get(f"{OUTBOUND}:resolve", params={"number": "+3312"}, headers=g)
    assert g_dry.json()["usedDefault"] is True
