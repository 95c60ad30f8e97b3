"""Users (create, reset a password: the new one shown once after the redirect, unlock,
sign out everywhere, a user's sessions ended one by one, roles) and the tenant's settings with
bounds."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from switchboard.auth.models import ROLES
from switchboard.console.deps import FormOperator, OperatorDep, notice_of, render
from switchboard.identity import lockout, service, sessions
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants import service as tenants
from switchboard.tenants.config import (
    SFU_PREFIX,
    SFU_TUNABLES,
    STRING_SETTINGS,
    TenantConfig,
    stored_problems,
)
from switchboard.web.flash import once_for, show_once

router = APIRouter()


@router.get("/users")
async def users_page(request: Request, operator: OperatorDep, session: Session) -> Response:
    """The users; once after a create or a reset, who it was (and the new password)."""
    users = await service.list_users(session, tenant_id=operator.tenant.id)
    now = request.app.state.runtime.clock.now()
    browsers = await lockout.locked_devices(session, tenant_id=operator.tenant.id, now=now)
    once = await once_for(request, operator.session)

    async def page(values: dict[str, str]) -> Response:
        return render(
            request, "users.html", operator, users=users, roles=ROLES, locked_browsers=browsers,
            now=now, notice=notice_of(request),
            created=values.get("created"), reset=values.get("reset"),
            password=values.get("password"), signed_out=values.get("signed_out"),
        )  # fmt: skip

    return await once.show(page)


@router.post("/users")
async def create_user(
    request: Request, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    user = await service.create_user(
        session, tenant=operator.tenant, username=str(form.get("username", "")).strip(),
        password=str(form.get("password", "")), role=str(form.get("role", "")),
        clock=runtime.clock, passwords=runtime.passwords,
    )  # fmt: skip
    return await show_once(
        request, session, operator.session, "/admin/users", created=user.username
    )


@router.post("/users/{username}/password")
async def reset_password(
    request: Request, username: str, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    password = await service.reset_password(
        session, tenant_id=operator.tenant.id, username=username, actor_id=operator.user.id,
        passwords=runtime.passwords, clock=runtime.clock,
    )  # fmt: skip
    return await show_once(
        request, session, operator.session, "/admin/users", reset=username, password=password
    )


@router.post("/users/{username}/unlock")
async def unlock(username: str, operator: FormOperator, session: Session) -> Response:
    await service.unlock_user(session, tenant_id=operator.tenant.id, username=username)
    return RedirectResponse("/admin/users?notice=unlocked", status_code=303)


@router.post("/users/{username}/sign-out-everywhere")
async def sign_out_everywhere(
    request: Request, username: str, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    """End every session of ``username`` (decision 0604). An admin may sign themselves out
    everywhere: this session ends too, and the page the redirect names sends them to sign in
    (an htmx post is told to load it as a whole page, not to swap the sign-in into this one)."""
    user = await service.sign_out_everywhere(
        session, tenant_id=operator.tenant.id, username=username, clock=runtime.clock
    )
    if user.id == operator.user.id and "hx-request" in request.headers:
        return Response(status_code=204, headers={"HX-Redirect": "/admin/users"})
    return await show_once(request, session, operator.session, "/admin/users", signed_out=username)


@router.get("/users/{username}/sessions")
async def sessions_page(
    request: Request, username: str, operator: OperatorDep, session: Session, runtime: RuntimeDep
) -> Response:
    """The user's live identity provider sessions, newest first, each with "End session"
    (decision 0605); once after one was ended, which."""
    found = await sessions.list_sessions(
        session, tenant_id=operator.tenant.id, username=username, clock=runtime.clock
    )
    once = await once_for(request, operator.session)

    async def page(values: dict[str, str]) -> Response:
        return render(
            request, "user_sessions.html", operator, username=username, sessions=found,
            ended=values.get("ended"),
        )  # fmt: skip

    return await once.show(page)


@router.post("/users/{username}/sessions/{sid}/end")
async def end_session(
    request: Request,
    username: str,
    sid: str,
    operator: FormOperator,
    session: Session,
    runtime: RuntimeDep,
) -> Response:
    """End one session of ``username`` (decision 0605). An admin ending the session they are
    signed in with is sent to sign in by the page the redirect names (an htmx post is told to
    load it as a whole page)."""
    await sessions.end_session(
        session, tenant_id=operator.tenant.id, username=username, sid=sid, clock=runtime.clock
    )
    page = f"/admin/users/{quote(username, safe='')}/sessions"
    if sid == operator.session.idp_sid and "hx-request" in request.headers:
        return Response(status_code=204, headers={"HX-Redirect": page})
    return await show_once(request, session, operator.session, page, ended=sid)


@router.post("/users/{username}/role")
async def set_role(
    request: Request, username: str, operator: FormOperator, session: Session
) -> Response:
    form = await request.form()
    await service.set_role(
        session, tenant_id=operator.tenant.id, username=username,
        role=str(form.get("role", "")), actor_id=operator.user.id,
    )  # fmt: skip
    return RedirectResponse("/admin/users?notice=saved", status_code=303)


@router.get("/settings")
async def settings_page(request: Request, operator: OperatorDep) -> Response:
    raw = operator.tenant.settings or {}
    config = TenantConfig.from_settings(raw)
    strings = [(key, raw.get(key, ""), default) for key, default in STRING_SETTINGS.items()]
    tunables = [(name, config.sfu[name], t) for name, t in SFU_TUNABLES.items()]
    return render(
        request, "settings.html", operator, strings=strings, tunables=tunables,
        sfu_prefix=SFU_PREFIX, notice=notice_of(request), problems=stored_problems(raw),
    )  # fmt: skip


@router.post("/settings")
async def save_settings(request: Request, operator: FormOperator, session: Session) -> Response:
    """Only the fields that differ from what is stored are written, each through the same
    validation as ``switchboard tenant set``; tunables snap to their bounds."""
    form = await request.form()
    raw = operator.tenant.settings or {}
    config = TenantConfig.from_settings(raw)
    for key in STRING_SETTINGS:
        value = form.get(key)
        if isinstance(value, str) and value.strip() != str(raw.get(key, "")):
            await tenants.set_setting(session, operator.tenant, key, value.strip())
    for name in SFU_TUNABLES:
        value = form.get(SFU_PREFIX + name)
        if isinstance(value, str) and value.strip() and float_or_none(value) != config.sfu[name]:
            await tenants.set_setting(session, operator.tenant, SFU_PREFIX + name, value.strip())
    return RedirectResponse("/admin/settings?notice=saved", status_code=303)


def float_or_none(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None
