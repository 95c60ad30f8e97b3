"""A tenant's external provider is offered on its own host only."""

from __future__ import annotations

from urllib.parse import urlencode

from httpx import AsyncClient

from switchboard.identity import clients
from switchboard.identity.federation import service as federation
from switchboard.identity.federation.secrets import ClientSecrets, SecretValue
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.factories import TenantFixture


async def test_another_tenants_provider_is_not_offered(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> None:
    spec = federation.ProviderSpec(
        name="partners", display_name="Partners", issuer="https://login.partners.example",
        client_id="acme-idp", secret=SecretValue("cs"),
    )  # fmt: skip
    async with runtime.db.transaction() as session:
        for fixture in (acme, globex):
            tenant = await tenants.require_by_name(session, fixture.name)
            await clients.ensure_console_client(
                session, tenant=tenant, base_url=f"http://{fixture.host}", clock=runtime.clock
            )
        acme_row = await tenants.require_by_name(session, "acme")
        await federation.add_provider(
            session, tenant=acme_row, spec=spec, client_secrets=ClientSecrets.of(runtime),
            now=runtime.clock.now(),
        )  # fmt: skip
    for fixture, offered in ((acme, True), (globex, False)):
        query = urlencode({
            "response_type": "code", "client_id": "console", "state": "s",
            "redirect_uri": f"http://{fixture.host}/admin/callback",
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "code_challenge_method": "S256",
        })  # fmt: skip
        headers = {"Host": fixture.host}
        page = await app_client.get(f"/oidc.ashx/authorize?{query}", headers=headers)
        assert page.status_code == 200
        assert ("Sign in with Partners" in page.text) is offered
        if not offered:
            start = await app_client.get(
                f"/oidc.ashx/federation/partners/start?{query}", headers=headers
            )
            assert start.status_code == 404
            assert "not offered" in start.text
        callback = await app_client.get(
            "/oidc.ashx/federation/partners/callback?state=x&code=y", headers=headers
        )
        assert callback.status_code == 400


async def test_a_name_no_route_matches_is_the_documented_json_404(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """A provider name with a line break matches no route: the API's JSON 404, which the
    document names beside the page a known route answers with."""
    answer = await app_client.get("/oidc.ashx/federation/a%0Ab/start")
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/json"
    document = (await app_client.get("/openapi.json")).json()
    for path in ("/oidc.ashx/federation/{name}/start", "/oidc.ashx/federation/{name}/callback"):
        assert "application/json" in document["paths"][path]["get"]["responses"]["404"]["content"]
