"""The matchers other features call, through their public service functions."""

from __future__ import annotations

from sqlalchemy import select

from switchboard.platform.routing import service as routing
from switchboard.platform.routing.models import InboundRoute
from switchboard.runtime import Runtime
from tests.factories import TenantFixture


async def test_new_tenant_resolves_inbound_to_the_catchall(
    runtime: Runtime, acme: TenantFixture
) -> None:
    async with runtime.db.transaction() as session:
        user = await routing.resolve_inbound(
            session, tenant_id=acme.id, did="+4930123", from_number=None
        )
    assert user == routing.CATCHALL_USER


async def test_outbound_without_rows_uses_the_default_trunk(
    runtime: Runtime, acme: TenantFixture
) -> None:
    async with runtime.db.transaction() as session:
        trunks = await routing.resolve_outbound(
            session, tenant_id=acme.id, number="+4930123", default_trunk_id="main"
        )
    assert trunks == ["main"]


async def test_resolution_follows_table_changes(runtime: Runtime, acme: TenantFixture) -> None:
    async with runtime.db.transaction() as session:
        await routing.create_outbound(
            session, tenant_id=acme.id, match="+49*", trunk_ids=["de-1", "de-2"]
        )
        await routing.create_inbound(
            session, tenant_id=acme.id, did="+4930*", from_number="", user="berlin"
        )
    async with runtime.db.transaction() as session:
        assert await routing.resolve_outbound(
            session, tenant_id=acme.id, number="00491701234", default_trunk_id="main"
        ) == ["de-1", "de-2"]
        assert (
            await routing.resolve_inbound(
                session, tenant_id=acme.id, did="+49301234", from_number="+1555"
            )
            == "berlin"
        )
    async with runtime.db.transaction() as session:
        await routing.update_outbound(session, tenant_id=acme.id, match="+49*", trunk_ids=["x"])
    async with runtime.db.transaction() as session:
        assert await routing.resolve_outbound(
            session, tenant_id=acme.id, number="+491701234", default_trunk_id="main"
        ) == ["x"]


async def test_tenant_creation_inserts_the_catchall_row(
    runtime: Runtime, acme: TenantFixture
) -> None:
    async with runtime.db.transaction() as session:  # straight from the table, no re-insert path
        rows = (await session.execute(select(InboundRoute))).scalars().all()
    assert [(r.tenant_id, r.did, r.from_number, r.user) for r in rows] == [
        (acme.id, "*", "", "admin")
    ]
