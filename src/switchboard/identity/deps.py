"""Typed dependencies: who is calling, and which tenant a Host names."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from switchboard.identity.bearer import Caller as CallerT
from switchboard.kit.errors import Forbidden, NotFound, Unauthorized
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant

bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="An OIDC access token from /oidc.ashx/token, or an API key (ak_...).",
)


async def get_caller(
    runtime: RuntimeDep,
    session: Session,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> CallerT:
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise Unauthorized()
    return await runtime.authenticator.authenticate(session, credentials.credentials)


Caller = Annotated[CallerT, Depends(get_caller)]


async def require_admin(caller: Caller) -> CallerT:
    if not caller.is_admin:
        raise Forbidden("this endpoint requires role=admin")
    return caller


AdminCaller = Annotated[CallerT, Depends(require_admin)]


async def require_super_admin(caller: AdminCaller) -> CallerT:
    if not caller.is_super_admin:
        raise Forbidden("this endpoint requires an admin of the primary tenant")
    return caller


SuperAdminCaller = Annotated[CallerT, Depends(require_super_admin)]


def request_host(request: Request) -> str:
    return request.headers.get("host", "")


async def get_host_tenant(request: Request, session: Session) -> Tenant:
    tenant = await tenants.resolve_host(session, request_host(request))
    if tenant is None:
        raise NotFound("no tenant serves this host")
    return tenant


HostTenant = Annotated[Tenant, Depends(get_host_tenant)]
