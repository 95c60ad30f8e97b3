"""All SQL for tenants and their domains."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Table, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session as SyncSession

from switchboard.tenants.models import Tenant, TenantDomain


async def get_by_name(session: AsyncSession, name: str) -> Tenant | None:
    result = await session.execute(select(Tenant).where(Tenant.name == name))
    return result.scalar_one_or_none()


async def get_by_id(session: AsyncSession, tenant_id: int) -> Tenant | None:
    return await session.get(Tenant, tenant_id)


# Built once, Core: it is read on every POST /v1/calls (a statement made per call costs more
# than the lookup).
_TENANTS = cast(Table, Tenant.__table__)
_NAME_AND_SETTINGS = select(_TENANTS.c.name, _TENANTS.c.settings).where(
    _TENANTS.c.id == bindparam("tenant_id")
)


def name_and_settings_now(
    session: SyncSession, tenant_id: int
) -> tuple[str, dict[str, Any]] | None:
    """A tenant's name and settings, read as two columns (no ORM row is loaded)."""
    row = session.connection().execute(_NAME_AND_SETTINGS, {"tenant_id": tenant_id}).first()
    return None if row is None else (row[0], row[1] or {})


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
