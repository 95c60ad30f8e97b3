"""Tenant administration: super-admin only (an admin of the primary tenant)."""

from __future__ import annotations

from fastapi import APIRouter

from switchboard.identity import clients
from switchboard.identity.deps import SuperAdminCaller
from switchboard.kit.clock import iso_utc
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import ERROR_RESPONSES, ErrorBody, Page
from switchboard.platform.tenants.schemas import TenantCreate, TenantItem
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants import repository, service
from switchboard.tenants.models import Tenant

router = APIRouter(prefix="/api.ashx/v1/tenants", tags=["tenants"], responses=ERROR_RESPONSES)


async def _item(session: Session, runtime: RuntimeDep, tenant: Tenant) -> TenantItem:
    return TenantItem(
        name=tenant.name,
        domains=await repository.domains_of(session, tenant.id),
        primary=await service.is_primary(session, tenant.id, runtime.settings.primary_domain),
        created_at_utc=iso_utc(tenant.created_at) or "",
    )


@router.get("", response_model=Page[TenantItem], summary="List every tenant (super-admin)")
async def list_tenants(
    _caller: SuperAdminCaller, session: Session, runtime: RuntimeDep, paging: Paging
) -> Page[TenantItem]:
    rows = await repository.list_all(session)
    window = rows[paging.offset : paging.offset + paging.limit]
    return Page(
        data=[await _item(session, runtime, t) for t in window],
        **paging.envelope(len(rows)),
    )


@router.post(
    "",
    status_code=201,
    response_model=TenantItem,
    responses={409: {"model": ErrorBody, "description": "Name or domain taken"}},
    summary="Create a tenant (super-admin)",
)
async def create_tenant(
    body: TenantCreate, _caller: SuperAdminCaller, session: Session, runtime: RuntimeDep
) -> TenantItem:
    tenant = await service.create_tenant(
        session, name=body.name, domains=body.domains, clock=runtime.clock, box=runtime.box
    )
    await clients.ensure_web_clients(
        session, tenant=tenant, scheme=runtime.settings.public_scheme, clock=runtime.clock
    )
    return await _item(session, runtime, tenant)
