"""A change made through one process is seen by every other process sharing the database.

Two runtimes (two engines, two index caches) stand in for two processes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import insert

from switchboard.platform.routing import service as routing
from switchboard.platform.routing.models import OutboundRoute
from switchboard.platform.whitelist import service as whitelist
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.factories import TenantFixture


@pytest.fixture
async def other(settings: Settings) -> AsyncIterator[Runtime]:
    runtime = Runtime(settings)
    yield runtime
    await runtime.db.dispose()


async def test_routing_changes_reach_the_other_process(
    runtime: Runtime, other: Runtime, acme: TenantFixture
) -> None:
    async def resolve_here() -> tuple[list[str], str]:
        async with runtime.db.transaction() as session:
            trunks = await routing.resolve_outbound(
                session, tenant_id=acme.id, number="+4930", default_trunk_id="d"
            )
            user = await routing.resolve_inbound(
                session, tenant_id=acme.id, did="100", from_number=None
            )
        return trunks, user

    assert await resolve_here() == (["d"], "admin")  # compiled and cached here
    async with other.db.transaction() as session:
        await routing.create_outbound(session, tenant_id=acme.id, match="+49*", trunk_ids=["de"])
        await routing.create_inbound(
            session, tenant_id=acme.id, did="100", from_number="", user="desk"
        )
    assert await resolve_here() == (["de"], "desk")
    async with other.db.transaction() as session:
        await routing.update_inbound(
            session, tenant_id=acme.id, did="100", from_number="", user="desk2"
        )
        await routing.delete_outbound(session, tenant_id=acme.id, match="+49*")
    assert await resolve_here() == (["d"], "desk2")


async def test_a_rolled_back_change_is_not_served_from_the_cache(
    runtime: Runtime, acme: TenantFixture
) -> None:
    class Abort(Exception):
        pass

    async def add_then_abort() -> None:
        async with runtime.db.transaction() as session:
            await routing.create_outbound(
                session, tenant_id=acme.id, match="+49*", trunk_ids=["de"]
            )
            assert await routing.resolve_outbound(
                session, tenant_id=acme.id, number="+4930", default_trunk_id="d"
            ) == ["de"]
            raise Abort

    with pytest.raises(Abort):
        await add_then_abort()
    async with runtime.db.transaction() as session:
        assert await routing.resolve_outbound(
            session, tenant_id=acme.id, number="+4930", default_trunk_id="d"
        ) == ["d"]


async def test_whitelist_changes_reach_the_other_process(
    runtime: Runtime, other: Runtime, acme: TenantFixture
) -> None:
    async with runtime.db.transaction() as session:
        assert not await whitelist.is_whitelisted(session, tenant_id=acme.id, number="+4930")
    async with other.db.transaction() as session:
        await whitelist.add_number(session, tenant_id=acme.id, number="004930", comment="")
    async with runtime.db.transaction() as session:
        assert await whitelist.is_whitelisted(session, tenant_id=acme.id, number="+4930")
    async with other.db.transaction() as session:
        await whitelist.write_numbers(session, tenant_id=acme.id, entries=[], confirm_empty=True)
    async with runtime.db.transaction() as session:
        assert not await whitelist.is_whitelisted(session, tenant_id=acme.id, number="+4930")


async def test_a_large_table_compiles_and_resolves_first_match(
    runtime: Runtime, acme: TenantFixture
) -> None:
    rows = 6000  # above the size compiled off the event loop
    async with runtime.db.transaction() as session:
        await session.execute(
            insert(OutboundRoute),
            [
                {
                    "tenant_id": acme.id,
                    "position": i,
                    "match": f"+1{i:05d}*",
                    "trunk_ids": [f"t{i}"],
                }
                for i in range(rows)
            ],
        )
        await routing.create_outbound(session, tenant_id=acme.id, match="+1*", trunk_ids=["us"])

    async def resolve(number: str) -> list[str]:
        async with runtime.db.transaction() as session:  # one session per concurrent call
            return await routing.resolve_outbound(
                session, tenant_id=acme.id, number=number, default_trunk_id="d"
            )

    results = await asyncio.gather(
        *(resolve(n) for n in ("+1059991", "001000001", "+1999999", "+4930"))
    )
    assert results == [["t5999"], ["t0"], ["us"], ["d"]]
