"""Sign-in through the identity provider, sign-out, and the super-admin's tenant switch."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from switchboard.console.deps import FormOperator, RoleRefused, cookie_jar, render
from switchboard.console.oidc import CLIENT_ID, RelyingParty, SignInFailed
from switchboard.console.session import (
    LOGIN_COOKIE,
    LOGIN_SECONDS,
    SESSION_COOKIE,
    SESSION_SECONDS,
    ConsoleSession,
    PendingLogin,
    new_csrf,
)
from switchboard.identity.deps import request_host
from switchboard.identity.models import User
from switchboard.kit.crypto import constant_time_equals
from switchboard.kit.errors import ApiError, Forbidden
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants import service as tenants

router = APIRouter()


def _base(runtime: RuntimeDep, request: Request) -> str:
    return f"{runtime.settings.public_scheme}://{request_host(request).lower()}"


def _oidc(request: Request) -> RelyingParty:
    oidc: RelyingParty = request.app.state.oidc
    return oidc


@router.get("/", include_in_schema=False)
async def home() -> Response:
    return RedirectResponse("/admin/calls", status_code=303)


@router.get("/login")
async def login(request: Request, runtime: RuntimeDep, switch: str = "") -> Response:
    """``switch=1`` signs in as another user than the one the provider remembers."""
    try:
        started = await _oidc(request).start(_base(runtime, request), fresh=switch == "1")
    except SignInFailed as exc:
        raise ApiError(str(exc), code="sign_in_failed", status=404) from exc
    response = RedirectResponse(started.url, status_code=303)
    now = int(runtime.clock.now().timestamp())
    pending = PendingLogin(
        state=started.state, nonce=started.nonce, verifier=started.verifier,
        expires=now + LOGIN_SECONDS,
    )  # fmt: skip
    cookie_jar(request).set_pending(response, pending)
    return response


@router.get("/callback")
async def callback(
    request: Request,
    runtime: RuntimeDep,
    session: Session,
    code: str = "",
    state: str = "",
    error: str = "",
    error_description: str = "",
) -> Response:
    if error:
        raise ApiError(error_description or error, code="sign_in_failed")
    jar = cookie_jar(request)
    now = int(runtime.clock.now().timestamp())
    pending = jar.pending(request.cookies.get(LOGIN_COOKIE), now=now)
    if pending is None or not state or not constant_time_equals(state, pending.state):
        raise ApiError("the sign-in's state does not match; start again", code="sign_in_failed")
    base = _base(runtime, request)
    try:
        identity = await _oidc(request).finish(
            base, code=code, verifier=pending.verifier, nonce=pending.nonce
        )
    except SignInFailed as exc:
        raise ApiError(str(exc), code="sign_in_failed") from exc
    host_tenant = await tenants.resolve_host(session, request_host(request))
    user = await session.get(User, int(identity.subject)) if identity.subject.isdigit() else None
    if user is None or host_tenant is None or user.tenant_id != host_tenant.id:
        raise ApiError("the ID token names no user of this tenant", code="sign_in_failed")
    if user.role != "admin":
        raise RoleRefused(user.username, user.role)
    response = RedirectResponse("/admin/calls", status_code=303)
    jar.clear(response, LOGIN_COOKIE)
    jar.set_session(
        response,
        ConsoleSession(
            user_id=user.id, tenant_id=user.tenant_id, acting_tenant_id=user.tenant_id,
            csrf=new_csrf(), expires=now + SESSION_SECONDS, id_token=identity.id_token,
        ),
    )  # fmt: skip
    return response


@router.post("/logout")
async def logout(request: Request, runtime: RuntimeDep, operator: FormOperator) -> Response:
    base = _base(runtime, request)
    target = f"{base}/admin/signed-out"
    # The provider returns only to the console client's registered post-logout address.
    registered = f"{base}/admin/"
    try:
        metadata = await _oidc(request).discover(base)
    except SignInFailed:
        metadata = {}
    end_session = metadata.get("end_session_endpoint")
    if isinstance(end_session, str):
        query = urlencode(
            {
                "id_token_hint": operator.session.id_token,
                "client_id": CLIENT_ID,
                "post_logout_redirect_uri": registered,
            }
        )
        target = f"{end_session}?{query}"
    response = RedirectResponse(target, status_code=303)
    cookie_jar(request).clear(response, SESSION_COOKIE)
    return response


@router.get("/signed-out")
async def signed_out(request: Request) -> Response:
    return render(request, "signed_out.html", None)


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
    response = RedirectResponse("/admin/calls", status_code=303)
    updated = ConsoleSession(
        user_id=operator.session.user_id, tenant_id=operator.session.tenant_id,
        acting_tenant_id=target.id, csrf=operator.csrf, expires=operator.session.expires,
        id_token=operator.session.id_token,
    )  # fmt: skip
    cookie_jar(request).set_session(response, updated)
    return response
