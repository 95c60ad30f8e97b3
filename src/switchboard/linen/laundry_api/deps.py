"""The Laundry API authenticates the laundry's own key, on the host of its tenant."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from switchboard.identity.deps import HostTenant
from switchboard.kit.errors import Unauthorized
from switchboard.linen.laundries import service as laundries
from switchboard.linen.laundries.models import Laundry
from switchboard.runtime import RuntimeDep, Session

laundry_key = HTTPBearer(
    auto_error=False,
    scheme_name="laundryKey",
    description=(
        "The laundry's own API key (`lk_...`), issued by an admin under "
        "`/api/v1/laundries/{id}/keys`. User tokens are not accepted here."
    ),
)


async def get_laundry(
    runtime: RuntimeDep,
    session: Session,
    tenant: HostTenant,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(laundry_key)],
) -> Laundry:
    if credentials is None or not credentials.credentials:
        raise Unauthorized("the laundry's API key is required", presented=False)
    return await laundries.authenticate(
        session, tenant_id=tenant.id, token=credentials.credentials, clock=runtime.clock
    )


CurrentLaundry = Annotated[Laundry, Depends(get_laundry)]
