"""All SQL for virtual numbers; every query starts from the tenant-scoped base statement."""

from __future__ import annotations

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.platform.numbers.models import VirtualNumber


def scoped(tenant_id: int) -> Select[VirtualNumber]:
    return select(VirtualNumber).where(VirtualNumber.tenant_id == tenant_id)


async def get_by_number(
    session: AsyncSession, *, tenant_id: int, number: str
) -> VirtualNumber | None:
    stmt = scoped(tenant_id).where(VirtualNumber.number == number)
    return (await session.execute(stmt)).scalar_one_or_none()


async def with_number_in_any_tenant(
    session: AsyncSession, *, numbers: list[str]
) -> list[VirtualNumber]:
    """Every tenant's virtual numbers written as one of ``numbers``: the one query that is not
    tenant-scoped, because it is how an inbound SIP call without a tenant domain finds its
    tenant (docs/decisions/0321-inbound-route-tenant-resolution.md). At most a few rows."""
    stmt = (
        select(VirtualNumber)
        .where(VirtualNumber.number.in_(numbers))
        .order_by(VirtualNumber.tenant_id, VirtualNumber.id)
    )
    return list((await session.execute(stmt)).scalars())


async def page(
    session: AsyncSession, *, tenant_id: int, limit: int, offset: int
) -> tuple[list[VirtualNumber], int]:
    base = scoped(tenant_id)
    total = await session.scalar(select(func.count()).select_from(base.subquery()))
    stmt = base.order_by(VirtualNumber.number, VirtualNumber.id).limit(limit).offset(offset)
    rows = list((await session.execute(stmt)).scalars())
    return rows, int(total or 0)


def add(session: AsyncSession, number: VirtualNumber) -> None:
    session.add(number)


async def delete(session: AsyncSession, number: VirtualNumber) -> None:
    await session.delete(number)
