"""The whitelist functions call placement uses."""

from __future__ import annotations

import pytest

from switchboard.kit.errors import BadRequest
from switchboard.platform.whitelist import service as whitelist
from switchboard.runtime import Runtime
from tests.factories import TenantFixture


async def test_add_number_is_idempotent_and_matching_normalises(
    runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> None:
    async with runtime.db.transaction() as session:
        assert await whitelist.add_number(
            session, tenant_id=acme.id, number="+49301234", comment="office"
        ) == (True, 1)
        assert await whitelist.add_number(
            session, tenant_id=acme.id, number="+49301234", comment=""
        ) == (False, 1)
        assert await whitelist.add_number(
            session, tenant_id=acme.id, number="+49301234", comment="call", replace_comment=False
        ) == (False, 1)
    async with runtime.db.transaction() as session:
        assert await whitelist.is_whitelisted(session, tenant_id=acme.id, number="0049301234")
        assert await whitelist.is_whitelisted(session, tenant_id=acme.id, number="+49301234")
        assert not await whitelist.is_whitelisted(session, tenant_id=acme.id, number="49301234")
        assert not await whitelist.is_whitelisted(session, tenant_id=globex.id, number="+49301234")
        assert await whitelist.comment_of(session, tenant_id=acme.id, number="+49301234") == (
            "office"
        )
        await whitelist.add_number(session, tenant_id=acme.id, number="+44 (20) 7946-0000")
        assert await whitelist.is_whitelisted(session, tenant_id=acme.id, number="00442079460000")
        assert not await whitelist.is_whitelisted(session, tenant_id=acme.id, number="+4420794")


async def test_add_number_rejects_an_invalid_number(runtime: Runtime, acme: TenantFixture) -> None:
    async with runtime.db.transaction() as session:
        with pytest.raises(BadRequest):
            await whitelist.add_number(session, tenant_id=acme.id, number="1" * 33, comment="")
        with pytest.raises(BadRequest):
            await whitelist.add_number(session, tenant_id=acme.id, number="  ", comment="")
        assert await whitelist.list_entries(session, tenant_id=acme.id) == []


async def test_a_changed_list_is_matched_as_changed(runtime: Runtime, acme: TenantFixture) -> None:
    many = [whitelist.Entry(f"+4930{n:07d}", "") for n in range(2000)]
    async with runtime.db.transaction() as session:
        await whitelist.write_numbers(session, tenant_id=acme.id, entries=many, confirm_empty=False)
    for _ in range(2):  # the second check is answered from the keys kept for this text
        async with runtime.db.transaction() as session:
            assert await whitelist.is_whitelisted(session, tenant_id=acme.id, number="+49300001999")
            assert not await whitelist.is_whitelisted(session, tenant_id=acme.id, number="+4930")
    async with runtime.db.transaction() as session:
        await whitelist.remove_number(session, tenant_id=acme.id, number="+49300001999")
        await whitelist.add_number(session, tenant_id=acme.id, number="+4930", comment="desk")
    async with runtime.db.transaction() as session:
        assert not await whitelist.is_whitelisted(session, tenant_id=acme.id, number="+49300001999")
        assert await whitelist.is_whitelisted(session, tenant_id=acme.id, number="0049 30")
