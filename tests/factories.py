"""Plain factory functions for tests."""

from __future__ import annotations

from dataclasses import dataclass, field

from httpx import AsyncClient

from switchboard.identity import clients
from switchboard.identity import service as identity
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants

PASSWORD = "correct horse battery"


@dataclass
class TenantFixture:
    id: int
    name: str
    host: str
    users: dict[str, str] = field(default_factory=dict)

    async def token(
        self, client: AsyncClient, username: str = "admin", scope: str = "openid"
    ) -> str:
        response = await client.post(
            "/oidc.ashx/token",
            data={
                "grant_type": "password",
                "client_id": "cli",
                "username": username,
                "password": PASSWORD,
                "scope": scope,
            },
            headers={"Host": self.host},
        )
        assert response.status_code == 200, response.text
        token: str = response.json()["access_token"]
        return token

    async def auth(self, client: AsyncClient, username: str = "admin") -> dict[str, str]:
        return {"Authorization": f"Bearer {await self.token(client, username)}"}


async def tenant(runtime: Runtime, name: str, domains: list[str]) -> TenantFixture:
    async with runtime.db.transaction() as session:
        row = await tenants.create_tenant(
            session, name=name, domains=domains, clock=runtime.clock, box=runtime.box
        )
        for role, username in (("admin", "admin"), ("power-user", "power"), ("user", "user")):
            await identity.create_user(
                session, tenant=row, username=username, password=PASSWORD, role=role,
                clock=runtime.clock, passwords=runtime.passwords,
            )  # fmt: skip
        await clients.create_client(session, tenant=row, client_id="cli", clock=runtime.clock)
    return TenantFixture(id=row.id, name=name, host=domains[0], users={"admin": "admin"})


async def api_key(runtime: Runtime, fixture: TenantFixture, username: str = "admin") -> str:
    async with runtime.db.transaction() as session:
        user = await identity.get_user(session, tenant_id=fixture.id, username=username)
        _, plaintext = await identity.create_api_key(
            session, tenant_id=fixture.id, user=user, name="test", clock=runtime.clock
        )
    return plaintext
