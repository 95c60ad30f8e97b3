"""Sign-in through the identity provider, sign-out, and the super-admin's tenant switch."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from switchboard.console.deps import CONSOLE, FormOperator, check_csrf, render
from switchboard.kit.errors import Forbidden
from switchboard.runtime import Session
from switchboard.tenants import service as tenants
from switchboard.web.signin import cookie_jar, signin_router

router = APIRouter()
router.include_router(
    signin_router(
        CONSOLE,
        signed_in=check_csrf,
        signed_out=lambda request: render(request, "signed_out.html", None),
    )
)


@router.get("/", include_in_schema=False)
async def home() -> Response:
    return RedirectResponse(CONSOLE.landing, status_code=303)


@router.post("/tenant")
async def switch_tenant(
    request: Request,
    operator: FormOperator,
    session: Session,
    tenant: Annotated[str, Form(max_length=64)],
) -> Response:
    if not operator.super_admin:
        raise Forbidden("only an admin of the primary tenant may switch tenant")
    target = await tenants.require_by_name(session, tenant)
    response = RedirectResponse(CONSOLE.landing, status_code=303)
    updated = dataclasses.replace(operator.session, acting_tenant_id=target.id, csrf=operator.csrf)
    cookie_jar(request).set_session(response, updated)
    return response
