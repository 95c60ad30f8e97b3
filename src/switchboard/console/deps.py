"""What every console page needs: the signed-in operator, the CSRF check and the renderer."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request

from switchboard.auth.bearer import Caller
from switchboard.auth.models import User
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant
from switchboard.web.cookies import WebSession
from switchboard.web.pages import NotSignedIn, PageRenderer, form_int, form_text, require_csrf
from switchboard.web.signin import RoleRefused, WebApp, cookie_jar, signed_in_user

__all__ = ["cookie_jar", "form_int", "form_text"]

HERE = Path(__file__).parent
STATIC = HERE / "static"
CONSOLE = WebApp(
    mount="/admin",
    client_id="console",
    landing="/admin/calls",
    roles=frozenset({"admin"}),
    audience="the console is for admins only",
)


@dataclass(frozen=True, slots=True)
class Operator:
    """The signed-in admin and the tenant they act on (their own, or any for a super-admin)."""

    user: User
    home: Tenant
    tenant: Tenant
    super_admin: bool
    session: WebSession

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


async def get_operator(request: Request, runtime: RuntimeDep, session: Session) -> Operator:
    found, user = await signed_in_user(request, runtime, session)
    if user.role not in CONSOLE.roles:
        raise RoleRefused(CONSOLE, user.username, user.role)
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
    await require_csrf(request, operator.csrf)
    return operator


FormOperator = Annotated[Operator, Depends(check_csrf)]


render = PageRenderer[Operator](HERE, static_prefix="/admin/static", person="operator")


NOTICES = {
    "created": "Created.",
    "saved": "Saved.",
    "already-listed": "Already listed; its comment was updated.",
    "resumed": "Resumed.",
    "test-queued": "A webhook.test delivery is queued.",
    "redelivery-queued": "The delivery is queued again.",
    "deleted": "Deleted.",
    "revoked": "Revoked.",
    "replaced": "The whole list was replaced.",
    "unlocked": "Unlocked.",
    "password-reset": "The password was reset.",
}


def notice_of(request: Request) -> str | None:
    """The message of a redirect's ``notice`` code; unknown codes show nothing, so that a link
    cannot put words of its own on a console page."""
    return NOTICES.get(request.query_params.get("notice", ""))
