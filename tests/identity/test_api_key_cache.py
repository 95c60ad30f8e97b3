"""A verified API key is trusted for a bounded time per process: a revocation made through this
process is honoured on the next request, one made elsewhere within the bound. Each holds for an
endpoint that authenticates in the request's transaction (the key list) and for one that needs
no transaction for a key verified moments ago (the call list, decision 0991)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from httpx import AsyncClient
from sqlalchemy import event, select, update

from switchboard.auth.models import ApiKey
from switchboard.identity import accounts
from switchboard.kit.clock import ManualClock
from switchboard.kit.crypto import sha256_hex
from switchboard.runtime import Runtime
from tests import factories
from tests.factories import TenantFixture

URL = "/api.ashx/v1/api-keys"


@pytest.fixture(params=[URL, "/api.ashx/v1/calls"], ids=["in-the-request", "cached-alone"])
def read_url(request: pytest.FixtureRequest) -> str:
    """An endpoint the key reads with."""
    url: str = request.param
    return url


async def revoke_elsewhere(runtime: Runtime, key: str) -> None:
    """What another process (or a direct SQL change) does: no signal reaches this process."""
    async with runtime.db.transaction() as session:
        await session.execute(
            update(ApiKey)
            .where(ApiKey.key_hash == sha256_hex(key))
            .values(revoked_at=runtime.clock.now())
        )


async def test_revocation_through_the_api_is_honoured_on_the_next_request(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, read_url: str
) -> None:
    key = await factories.api_key(runtime, acme)
    key_headers = {"Authorization": f"Bearer {key}"}
    listed = await app_client.get(read_url, headers=key_headers)
    assert listed.status_code == 200  # verified, now cached
    async with runtime.db.transaction(read_only=True) as session:
        stmt = select(ApiKey.id).where(ApiKey.key_hash == sha256_hex(key))
        key_id = (await session.execute(stmt)).scalar_one()
    revoked = await app_client.delete(f"{URL}/{key_id}", headers=await acme.auth(app_client))
    assert revoked.status_code == 200
    assert (await app_client.get(read_url, headers=key_headers)).status_code == 401


async def test_disabling_the_user_in_process_is_honoured_on_the_next_request(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, read_url: str
) -> None:
    key = await factories.api_key(runtime, acme)
    key_headers = {"Authorization": f"Bearer {key}"}
    assert (await app_client.get(read_url, headers=key_headers)).status_code == 200
    async with runtime.db.transaction() as session:
        await accounts.set_disabled(
            session, tenant_id=acme.id, username="admin", disabled=True, clock=runtime.clock
        )
    assert (await app_client.get(read_url, headers=key_headers)).status_code == 401


async def test_a_revocation_elsewhere_is_honoured_within_the_bound(
    app_client: AsyncClient,
    acme: TenantFixture,
    runtime: Runtime,
    read_url: str,
    clock: ManualClock,
) -> None:
    bound = runtime.settings.api_key_cache_seconds
    key = await factories.api_key(runtime, acme)
    key_headers = {"Authorization": f"Bearer {key}"}
    assert (await app_client.get(read_url, headers=key_headers)).status_code == 200

    await revoke_elsewhere(runtime, key)
    clock.advance(bound / 2)
    assert (await app_client.get(read_url, headers=key_headers)).status_code == 200  # still trusted
    clock.advance(bound / 2 + 0.001)
    assert (await app_client.get(read_url, headers=key_headers)).status_code == 401
    clock.advance(bound * 10)
    assert (await app_client.get(read_url, headers=key_headers)).status_code == 401


async def test_the_last_use_is_still_recorded(
    app_client: AsyncClient,
    acme: TenantFixture,
    runtime: Runtime,
    read_url: str,
    clock: ManualClock,
) -> None:
    key = await factories.api_key(runtime, acme)
    key_headers = {"Authorization": f"Bearer {key}"}

    async def last_used() -> object:
        async with runtime.db.transaction(read_only=True) as session:
            stmt = select(ApiKey.last_used_at).where(ApiKey.key_hash == sha256_hex(key))
            return (await session.execute(stmt)).scalar_one()

    assert (await app_client.get(read_url, headers=key_headers)).status_code == 200
    first = await last_used()
    assert first == clock.now()
    clock.advance(1)
    assert (await app_client.get(read_url, headers=key_headers)).status_code == 200  # cached
    assert await last_used() == first  # at most once a minute
    clock.advance(61)
    assert (await app_client.get(read_url, headers=key_headers)).status_code == 200
    assert await last_used() == clock.now()


async def test_requests_that_miss_the_cache_together_share_one_lookup(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, read_url: str
) -> None:
    key = await factories.api_key(runtime, acme)
    key_headers = {"Authorization": f"Bearer {key}"}
    lookups: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "WHERE api_keys.key_hash =" in statement:
            lookups.append(statement)

    event.listen(runtime.db.engine.sync_engine, "before_cursor_execute", count)
    try:
        answers = await asyncio.gather(
            *(app_client.get(read_url, headers=key_headers) for _ in range(8))
        )
    finally:
        event.remove(runtime.db.engine.sync_engine, "before_cursor_execute", count)
    assert [a.status_code for a in answers] == [200] * 8
    assert len(lookups) == 1, lookups
