"""What every console page needs: the signed-in operator, the CSRF check and the renderer."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.templating import Jinja2Templates
from starlette.responses import HTMLResponse

from switchboard.console.session import SESSION_COOKIE, ConsoleSession, CookieJar
from switchboard.identity.bearer import Caller
from switchboard.identity.models import User
from switchboard.kit.clock import iso_utc
from switchboard.kit.crypto import constant_time_equals
from switchboard.kit.errors import ApiError, BadRequest
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant

HERE = Path(__file__).parent
STATIC = HERE / "static"
templates = Jinja2Templates(directory=HERE / "templates")
templates.env.globals["iso"] = iso_utc


@cache
def static_url(name: str) -> str:
    """A static asset's URL with its content hash, so that it may be cached for long."""
    digest = hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:12]
    return f"/admin/static/{name}?v={digest}"


templates.env.globals["static"] = static_url


class NotSignedIn(Exception):
    """No valid console session: the browser is sent to the sign-in."""


class RoleRefused(ApiError):
    """Signed in, but not as an admin of the tenant."""

    def __init__(self, username: str, role: str) -> None:
        super().__init__(
            f"{username} has role {role!r}; the console is for admins only",
            code="insufficient_role",
            status=403,
        )


class CsrfRefused(ApiError):
    """A form came without the session's CSRF token."""

    def __init__(self) -> None:
        super().__init__(
            "the form's CSRF token is missing or stale; reload the page and try again",
            code="csrf_failed",
            status=403,
        )


@dataclass(frozen=True, slots=True)
class Operator:
    """The signed-in admin and the tenant they act on (their own, or any for a super-admin)."""

    user: User
    home: Tenant
    tenant: Tenant
    super_admin: bool
    session: ConsoleSession

    @property
    def csrf(self) -> str:
        return self.session.csrf

    @property
    def caller(self) -> Caller:
        """The same principal the REST API would see for this admin, on the acting tenant."""
        return Caller(
            tenant_id=self.tenant.id,
            tenant_name=self.tenant.name,
            subject=str(self.user.id),
            username=self.user.username,
            role=self.user.role,
            method="oidc",
            primary=self.super_admin and self.tenant.id == self.home.id,
        )


def cookie_jar(request: Request) -> CookieJar:
    jar: CookieJar = request.app.state.cookies
    return jar


async def get_operator(request: Request, runtime: RuntimeDep, session: Session) -> Operator:
    now = int(runtime.clock.now().timestamp())
    found = cookie_jar(request).session(request.cookies.get(SESSION_COOKIE), now=now)
    if found is None:
        raise NotSignedIn()
    user = await session.get(User, found.user_id)
    if user is None or user.disabled or user.tenant_id != found.tenant_id:
        raise NotSignedIn()
    if user.role != "admin":
        raise RoleRefused(user.username, user.role)
    home = await session.get(Tenant, user.tenant_id)
    if home is None:
        raise NotSignedIn()
    primary = await tenants.is_primary(session, home.id, runtime.settings.primary_domain)
    acting = home
    if primary and found.acting_tenant_id != home.id:
        acting = await session.get(Tenant, found.acting_tenant_id) or home
    if acting is home and found.acting_tenant_id != home.id:
        found = replace(found, acting_tenant_id=home.id)
    return Operator(user=user, home=home, tenant=acting, super_admin=primary, session=found)


OperatorDep = Annotated[Operator, Depends(get_operator)]


async def check_csrf(request: Request, operator: OperatorDep) -> Operator:
    """Every state-changing request carries the session's token, in the form or a header."""
    presented = request.headers.get("x-csrf-token")
    if presented is None:
        form = await request.form()
        value = form.get("csrf")
        presented = value if isinstance(value, str) else None
    if not presented or not constant_time_equals(presented, operator.csrf):
        raise CsrfRefused()
    return operator


FormOperator = Annotated[Operator, Depends(check_csrf)]


def render(
    request: Request,
    template: str,
    operator: Operator | None,
    *,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    context.update(request=request, operator=operator)
    return templates.TemplateResponse(request, template, context, status_code=status)


def form_int(value: object, name: str, *, default: int | None = None) -> int | None:
    """A whole number from a form field; blank is ``default``, anything else non-numeric 400."""
    text = str(value if value is not None else "").strip()
    if text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f"{name}: must be a whole number") from None


def form_text(value: object) -> str | None:
    """A form field's text, or None when it was left blank (meaning: unchanged)."""
    text = str(value if value is not None else "")
    return text if text.strip() != "" else None


NOTICES = {
    "created": "Created.",
    "saved": "Saved.",
    "resumed": "Resumed.",
    "test-queued": "A webhook.test delivery is queued.",
    "redelivery-queued": "The delivery is queued again.",
    "deleted": "Deleted.",
    "replaced": "The whole list was replaced.",
    "unlocked": "Unlocked.",
    "password-reset": "The password was reset.",
}


def notice_of(request: Request) -> str | None:
    """The message of a redirect's ``notice`` code; unknown codes show nothing, so that a link
    cannot put words of its own on a console page."""
    return NOTICES.get(request.query_params.get("notice", ""))
