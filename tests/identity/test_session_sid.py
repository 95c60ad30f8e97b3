"""A browser session's public id (decision 0605): the ID tokens of the authorization-code flow
carry it as ``sid`` (also after a refresh), the session records the browser's User-Agent and
address, and ending the session revokes the refresh tokens issued through it, not others."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from httpx import ASGITransport, AsyncClient
from joserfc import jwt
from joserfc.jwk import KeySet

from switchboard.app import create_app
from switchboard.identity import clients, sessions
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants
from tests.conftest import PRIMARY_HOST
from tests.factories import TenantFixture
from tests.identity.test_signin_errors import exchange, get_code

BASE = f"http://{PRIMARY_HOST}"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # A proxy at 127.0.0.1 (the test transport's peer) is trusted to name the client.
    return settings.model_copy(update={"trusted_proxies": ("127.0.0.1/32",)})


@pytest.fixture
async def transport(runtime: Runtime, acme: TenantFixture) -> AsyncIterator[ASGITransport]:
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await clients.ensure_console_client(
            session, tenant=tenant, base_url=BASE, clock=runtime.clock
        )
    app = create_app(runtime=runtime)
    async with runtime.lifespan():
        yield ASGITransport(app=app)


def browser(transport: ASGITransport, agent: str, forwarded: str) -> AsyncClient:
    headers = {"user-agent": agent, "x-forwarded-for": forwarded}
    return AsyncClient(transport=transport, base_url=BASE, headers=headers)


async def claims(client: AsyncClient, token: str) -> dict[str, object]:
    keys = KeySet.import_key_set((await client.get("/oidc.ashx/jwks")).json())
    return dict(jwt.decode(token, keys, algorithms=["RS256"]).claims)


async def refreshed(client: AsyncClient, token: str) -> tuple[int, dict[str, str]]:
    answer = await client.post(
        "/oidc.ashx/token",
        data={"grant_type": "refresh_token", "client_id": "console", "refresh_token": token},
    )
    body: dict[str, str] = answer.json()
    return answer.status_code, body


async def test_the_id_token_names_the_session_and_ending_it_revokes_its_refresh_tokens(
    transport: ASGITransport, runtime: Runtime, acme: TenantFixture, clock: ManualClock
) -> None:
    long_agent = "Laptop/" + "x" * 400
    async with (
        browser(transport, long_agent, "198.51.100.7") as laptop,
        browser(transport, "Phone/2.0", "spoofed, 203.0.113.9") as phone,
    ):
        status, laptop_tokens = await exchange(laptop, await get_code(laptop))
        assert status == 200, laptop_tokens
        clock.advance(60)
        status, phone_tokens = await exchange(phone, await get_code(phone))
        assert status == 200, phone_tokens

        async with runtime.db.transaction(read_only=True) as session:
            phone_row, laptop_row = await sessions.list_sessions(
                session, tenant_id=acme.id, username="admin", clock=runtime.clock
            )
        assert (await claims(laptop, laptop_tokens["id_token"]))["sid"] == laptop_row.sid
        assert (await claims(phone, phone_tokens["id_token"]))["sid"] == phone_row.sid
        assert laptop_row.sid != phone_row.sid
        assert (
            "sid"
            in (await laptop.get("/oidc.ashx/.well-known/openid-configuration")).json()[
                "claims_supported"
            ]
        )
        # The User-Agent cut to 256 characters; the address by kit.clientip's rule: the right-most
        # hop a trusted proxy names.
        assert (laptop_row.user_agent, laptop_row.address) == (long_agent[:256], "198.51.100.7")
        assert (phone_row.user_agent, phone_row.address) == ("Phone/2.0", "203.0.113.9")

        # A refresh keeps the session: the new ID token names it, the new refresh token too.
        status, again = await refreshed(laptop, laptop_tokens["refresh_token"])
        assert status == 200, again
        assert (await claims(laptop, again["id_token"]))["sid"] == laptop_row.sid

        async with runtime.db.transaction() as session:
            await sessions.end_session(
                session, tenant_id=acme.id, username="admin", sid=laptop_row.sid,
                clock=runtime.clock,
            )  # fmt: skip
        status, body = await refreshed(laptop, again["refresh_token"])
        assert (status, body["error"]) == (400, "invalid_grant")
        status, body = await refreshed(phone, phone_tokens["refresh_token"])
        assert status == 200, body


async def test_signing_out_at_end_session_revokes_that_sessions_refresh_tokens(
    transport: ASGITransport,
) -> None:
    """RP-initiated logout ends the browser's session as ending it from the CLI does: the
    refresh tokens issued through it stop working, another browser's go on."""
    async with (
        browser(transport, "Laptop/1.0", "198.51.100.7") as laptop,
        browser(transport, "Phone/2.0", "203.0.113.9") as phone,
    ):
        status, laptop_tokens = await exchange(laptop, await get_code(laptop))
        assert status == 200, laptop_tokens
        status, phone_tokens = await exchange(phone, await get_code(phone))
        assert status == 200, phone_tokens
        signed_out = await laptop.get(
            "/oidc.ashx/end_session", params={"id_token_hint": laptop_tokens["id_token"]}
        )
        assert signed_out.status_code == 200
        assert "signed out" in signed_out.text.lower()
        status, body = await refreshed(laptop, laptop_tokens["refresh_token"])
        assert (status, body["error"]) == (400, "invalid_grant")
        status, body = await refreshed(phone, phone_tokens["refresh_token"])
        assert status == 200, body
