"""All SQL for tenants and their domains."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.tenants.models import Tenant, TenantDomain


async def get_by_name(session: AsyncSession, name: str) -> Tenant | None:
    result = await session.execute(select(Tenant).where(Tenant.name == name))
    return result.scalar_one_or_none()


async def get_by_id(session: AsyncSession, tenant_id: int) -> Tenant | None:
    return await session.get(Tenant, tenant_id)


async def get_by_domain(session: AsyncSession, domain: str) -> Tenant | None:
    stmt = (
        select(Tenant)
        .join(TenantDomain, TenantDomain.tenant_id == Tenant.id)
        .where(TenantDomain.domain == domain)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def domains_of(session: AsyncSession, tenant_id: int) -> list[str]:
    stmt = select(TenantDomain.domain).where(TenantDomain.tenant_id == tenant_id)
    return sorted((await session.execute(stmt)).scalars())


async def domain_taken(session: AsyncSession, domain: str) -> bool:
    return await session.get(TenantDomain, domain) is not None


async def list_all(session: AsyncSession) -> list[Tenant]:
    return list((await session.execute(select(Tenant).order_by(Tenant.id))).scalars())
