"""What every page of the linen web app needs: the signed-in viewer, role checks, the renderer.

Roles are the Data API's (``linen.deps``): every role reads, ``admin`` writes, ``admin`` and
``power-user`` reveal vault secrets. Write controls are hidden from the others, and their posts
are refused with 403 all the same.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request

from switchboard.auth.bearer import Caller
from switchboard.auth.models import User
from switchboard.identity.deps import request_host
from switchboard.kit.errors import Forbidden
from switchboard.linen.common import FIRST_DAY, LAST_DAY, OUT_OF_RANGE
from switchboard.linen.deps import REVEAL_ROLES, WRITE_ROLES
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant
from switchboard.web.cookies import WebSession
from switchboard.web.pages import NotSignedIn, PageRenderer, require_csrf
from switchboard.web.signin import RoleRefused, WebApp, signed_in_user

HERE = Path(__file__).parent
STATIC = HERE / "static"
LINEN = WebApp(
    mount="/app",
    client_id="linen",
    landing="/app/today",
    roles=frozenset({"admin", "power-user", "user"}),
    audience="the linen portal is for admin, power-user and user",
)


def money(amount: int | None, currency: str | None = "") -> str:
    """Integer minor units as ``12.34 EUR``."""
    if amount is None:
        return ""
    return f"{amount / 100:.2f} {currency or ''}".strip()


@dataclass(frozen=True, slots=True)
class Viewer:
    """The signed-in user of the tenant serving the host."""

    user: User
    tenant: Tenant
    session: WebSession

    @property
    def csrf(self) -> str:
        return self.session.csrf

    @property
    def can_write(self) -> bool:
        return self.user.role in WRITE_ROLES

    @property
    def can_reveal(self) -> bool:
        return self.user.role in REVEAL_ROLES

    @property
    def caller(self) -> Caller:
        """The principal the Data API would see for this user."""
        return Caller(
            tenant_id=self.tenant.id,
            tenant_name=self.tenant.name,
            subject=str(self.user.id),
            username=self.user.username,
            role=self.user.role,
            method="oidc",
            primary=False,
        )


async def get_viewer(request: Request, runtime: RuntimeDep, session: Session) -> Viewer:
    found, user = await signed_in_user(request, runtime, session)
    if user.role not in LINEN.roles:
        raise RoleRefused(LINEN, user.username, user.role)
    tenant = await tenants.resolve_host(session, request_host(request))
    if tenant is None or tenant.id != user.tenant_id:
        raise NotSignedIn()  # the tenant is the host's: a session of another one is no session
    return Viewer(user=user, tenant=tenant, session=found)


ViewerDep = Annotated[Viewer, Depends(get_viewer)]


async def check_csrf(request: Request, viewer: ViewerDep) -> Viewer:
    await require_csrf(request, viewer.csrf)
    return viewer


FormViewer = Annotated[Viewer, Depends(check_csrf)]


def _writer(viewer: Viewer) -> Viewer:
    if not viewer.can_write:
        raise Forbidden("only role=admin may change portal data")
    return viewer


async def require_writer(viewer: FormViewer) -> Viewer:
    return _writer(viewer)


async def require_editor(viewer: ViewerDep) -> Viewer:
    """An admin opening a form (a GET: no CSRF token to check yet)."""
    return _writer(viewer)


async def require_revealer(viewer: FormViewer) -> Viewer:
    if not viewer.can_reveal:
        raise Forbidden("revealing a vault secret needs role=admin or role=power-user")
    return viewer


Writer = Annotated[Viewer, Depends(require_writer)]
Editor = Annotated[Viewer, Depends(require_editor)]
Revealer = Annotated[Viewer, Depends(require_revealer)]


render = PageRenderer[Viewer](HERE, static_prefix="/app/static", person="viewer")
render.templates.env.filters["money"] = money


def parse_day(value: str | None, default: dt.date, *, service_day: bool = False) -> dt.date:
    """A ``YYYY-MM-DD`` query value; blank is ``default``, anything else not a date is 400, as
    is a ``service_day`` (a day of sheets, which pages count days from) outside the range of
    the dates users enter (decision 0520)."""
    from switchboard.kit.errors import BadRequest

    if not value:
        return default
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        raise BadRequest("date: expected YYYY-MM-DD") from None
    if service_day and not FIRST_DAY <= day <= LAST_DAY:
        raise BadRequest(f"date: {OUT_OF_RANGE}")
    return day
