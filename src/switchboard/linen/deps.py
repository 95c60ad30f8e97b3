"""Who may call the Data API: an OIDC access token of the tenant that serves the Host.

API keys (``ak_...``) are refused here: they belong to the platform API and carry its admin
surface, which would bypass the portal's read-only roles (see decision 0501).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from switchboard.auth.bearer import API_KEY_PREFIX
from switchboard.auth.bearer import Caller as CallerT
from switchboard.identity.deps import HostTenant, request_host
from switchboard.kit.errors import Forbidden, Unauthorized
from switchboard.runtime import RuntimeDep, Session

WRITE_ROLES = frozenset({"admin"})
REVEAL_ROLES = frozenset({"admin", "power-user"})

oidc_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="oidcBearer",
    description=(
        "An OIDC access token from the identity provider (`/oidc.ashx/token`) of the tenant "
        "serving the request's host. Roles: `admin` reads and writes; `power-user` and `user` "
        "read. API keys are not accepted."
    ),
)


async def get_portal_caller(
    runtime: RuntimeDep,
    request: Request,
    session: Session,
    tenant: HostTenant,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(oidc_bearer)],
) -> CallerT:
    if credentials is None or not credentials.credentials:
        raise Unauthorized(presented=False)
    token = credentials.credentials
    if token.startswith(API_KEY_PREFIX):
        raise Unauthorized("the linen Data API accepts OIDC access tokens only")
    caller = await runtime.authenticator.authenticate(session, token, host=request_host(request))
    if caller.tenant_id != tenant.id:
        raise Unauthorized("the token belongs to another tenant than this host")
    return caller


PortalCaller = Annotated[CallerT, Depends(get_portal_caller)]


async def require_writer(caller: PortalCaller) -> CallerT:
    if caller.role not in WRITE_ROLES:
        raise Forbidden("only role=admin may change portal data")
    return caller


PortalAdmin = Annotated[CallerT, Depends(require_writer)]


async def require_revealer(caller: PortalCaller) -> CallerT:
    if caller.role not in REVEAL_ROLES:
        raise Forbidden("revealing a vault secret needs role=admin or role=power-user")
    return caller


VaultRevealer = Annotated[CallerT, Depends(require_revealer)]
