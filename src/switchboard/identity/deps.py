"""Typed dependencies: who is calling, and which tenant a Host names."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.bearer import Caller as CallerT
from switchboard.kit.errors import Forbidden, NotFound, Unauthorized
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant

bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="An OIDC access token from /oidc.ashx/token, or an API key (ak_...).",
)


Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)]


def request_host(request: Request) -> str:
    return request.headers.get("host", "")


async def _authenticate(
    runtime: RuntimeDep,
    session: AsyncSession,
    request: Request,
    credentials: HTTPAuthorizationCredentials | None,
) -> CallerT:
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise Unauthorized(presented=False)
    return await runtime.authenticator.authenticate(
        session, credentials.credentials, host=request_host(request)
    )


async def get_caller(
    runtime: RuntimeDep, request: Request, session: Session, credentials: Credentials
) -> CallerT:
    return await _authenticate(runtime, session, request, credentials)


Caller = Annotated[CallerT, Depends(get_caller)]


def _admin(caller: CallerT) -> CallerT:
    if not caller.is_admin:
        raise Forbidden("this endpoint requires role=admin")
    return caller


async def require_admin(caller: Caller) -> CallerT:
    return _admin(caller)


AdminCaller = Annotated[CallerT, Depends(require_admin)]


async def require_admin_reading(
    runtime: RuntimeDep, request: Request, credentials: Credentials
) -> CallerT:
    """``AdminCaller`` for an endpoint that opens its own transactions (``POST /v1/calls``
    writes only once the bridge answered; the call list reads in one unit of work): an API key
    verified moments ago needs no transaction at all, anything else is authenticated in a
    read-only transaction of its own (decision 0991)."""
    if credentials is not None and credentials.scheme.lower() == "bearer":
        caller = runtime.authenticator.cached(credentials.credentials)
        if caller is not None:
            return _admin(caller)
        await runtime.authenticator.prepare(request_host(request), credentials.credentials)
    async with runtime.db.transaction(read_only=True) as session:
        return _admin(await _authenticate(runtime, session, request, credentials))


AdminCallerReading = Annotated[CallerT, Depends(require_admin_reading)]


async def require_super_admin(caller: AdminCaller) -> CallerT:
    if not caller.is_super_admin:
        raise Forbidden("this endpoint requires an admin of the primary tenant")
    return caller


SuperAdminCaller = Annotated[CallerT, Depends(require_super_admin)]


async def get_host_tenant(request: Request, session: Session) -> Tenant:
    tenant = await tenants.resolve_host(session, request_host(request))
    if tenant is None:
        raise NotFound("no tenant serves this host")
    return tenant


HostTenant = Annotated[Tenant, Depends(get_host_tenant)]
