"""All SQL of the whitelist; every query is scoped to one tenant."""

from __future__ import annotations

from sqlalchemy import Select, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.platform.whitelist.models import Whitelist


def _of(tenant_id: int) -> Select[Whitelist]:
    return select(Whitelist).where(Whitelist.tenant_id == tenant_id)


async def read(session: AsyncSession, tenant_id: int) -> Whitelist | None:
    """The tenant's whitelist as committed now (no identity-map copy is reused)."""
    stmt = _of(tenant_id).execution_options(populate_existing=True)
    return (await session.execute(stmt)).scalar_one_or_none()


async def lock(session: AsyncSession, tenant_id: int) -> Whitelist:
    """The tenant's whitelist, locked for update until the transaction ends (created empty
    when the tenant has none yet)."""
    stmt = _of(tenant_id).with_for_update().execution_options(populate_existing=True)
    row = (await session.execute(stmt)).scalar_one_or_none()
    if row is not None:
        return row
    try:
        async with session.begin_nested():
            session.add(Whitelist(tenant_id=tenant_id, numbers=[], comments={}))
    except IntegrityError:  # created by a concurrent writer
        pass
    return (await session.execute(stmt)).scalar_one()


async def store(
    session: AsyncSession,
    row: Whitelist,
    *,
    numbers: list[str],
    comments: dict[str, str],
) -> None:
    row.numbers = numbers
    row.comments = comments
    await session.flush()
