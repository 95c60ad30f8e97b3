"""Each application also runs on its own, with the same conventions."""

from __future__ import annotations

from httpx import ASGITransport, AsyncClient

from switchboard.app import identity_app, linen_app, platform_app
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.factories import PASSWORD, TenantFixture


async def test_the_identity_provider_alone_issues_tokens_the_platform_alone_accepts(
    settings: Settings, runtime: Runtime, acme: TenantFixture
) -> None:
    idp = identity_app(settings)
    platform = platform_app(settings.model_copy(update={"run_workers": False}))
    async with (
        idp.router.lifespan_context(idp),
        platform.router.lifespan_context(platform),
        AsyncClient(transport=ASGITransport(app=idp), base_url=f"http://{acme.host}") as auth,
        AsyncClient(transport=ASGITransport(app=platform), base_url=f"http://{acme.host}") as api,
    ):
        token = await auth.post(
            "/token",
            data={"grant_type": "password", "client_id": "cli", "username": "admin",
                  "password": PASSWORD},
        )  # fmt: skip
        assert token.status_code == 200
        assert token.headers["cache-control"] == "no-store"
        listed = await api.get(
            "/api.ashx/v1/api-keys",
            headers={"Authorization": f"Bearer {token.json()['access_token']}"},
        )
        assert listed.status_code == 200
        assert listed.headers["cache-control"] == "no-store"
        assert (await api.get("/nowhere")).json()["error"] == "not_found"


async def test_the_linen_portal_alone_answers_its_version(settings: Settings) -> None:
    portal = linen_app(settings)
    async with (
        portal.router.lifespan_context(portal),
        AsyncClient(transport=ASGITransport(app=portal), base_url="http://acme.test") as client,
    ):
        response = await client.get("/version")
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-store"
