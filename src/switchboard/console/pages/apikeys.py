"""API keys: mint (the key shown once, after the redirect), revoke, and when each was last
used."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from switchboard.console.deps import FormOperator, OperatorDep, render
from switchboard.identity import service
from switchboard.kit.errors import Forbidden
from switchboard.platform.apikeys.schemas import ApiKeyCreate
from switchboard.runtime import RuntimeDep, Session
from switchboard.web.flash import once_for, show_once

router = APIRouter(prefix="/api-keys")


@router.get("")
async def keys_page(request: Request, operator: OperatorDep, session: Session) -> Response:
    """The keys; once after a mint, the new key's plaintext."""
    keys = await service.list_api_keys(session, tenant_id=operator.tenant.id)
    once = await once_for(request, operator.session)

    async def page(values: dict[str, str]) -> Response:
        minted = next((key for key, _ in keys if key.id == values.get("key")), None)
        plaintext = values.get("plaintext") if minted is not None else None
        return render(
            request, "apikeys.html", operator, keys=keys, minted=minted, plaintext=plaintext
        )

    return await once.show(page)


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
    return await show_once(
        request, session, operator.session, "/admin/api-keys", key=key.id, plaintext=plaintext
    )


@router.post("/{key_id}/revoke")
async def revoke(
    key_id: str, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    await service.revoke_api_key(
        session, tenant_id=operator.tenant.id, key_id=key_id, clock=runtime.clock
    )
    return RedirectResponse("/admin/api-keys", status_code=303)
