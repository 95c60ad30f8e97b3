"""API keys: mint (the key shown once), revoke, and when each was last used."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from switchboard.console.deps import FormOperator, Operator, OperatorDep, render
from switchboard.identity import service
from switchboard.kit.errors import Forbidden
from switchboard.platform.apikeys.schemas import ApiKeyCreate
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/api-keys")


async def _list(
    request: Request, operator: Operator, session: Session, *, status: int = 200, **extra: object
) -> Response:
    keys = await service.list_api_keys(session, tenant_id=operator.tenant.id)
    return render(request, "apikeys.html", operator, status=status, keys=keys, **extra)


@router.get("")
async def keys_page(request: Request, operator: OperatorDep, session: Session) -> Response:
    return await _list(request, operator, session)


@router.post("")
async def mint(
    request: Request,
    operator: FormOperator,
    session: Session,
    runtime: RuntimeDep,
    name: Annotated[str, Form()] = "",
) -> Response:
    body = ApiKeyCreate(name=name)
    if operator.tenant.id != operator.home.id:
        raise Forbidden("API keys are minted by a local admin user of the tenant")
    key, plaintext = await service.create_api_key(
        session, tenant_id=operator.tenant.id, user=operator.user, name=body.name,
        clock=runtime.clock,
    )  # fmt: skip
    return await _list(request, operator, session, status=201, minted=key, plaintext=plaintext)


@router.post("/{key_id}/revoke")
async def revoke(
    key_id: str, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    await service.revoke_api_key(
        session, tenant_id=operator.tenant.id, key_id=key_id, clock=runtime.clock
    )
    return RedirectResponse("/admin/api-keys", status_code=303)
