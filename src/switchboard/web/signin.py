"""The sign-in routes every web app shares: ``/login``, ``/callback``, ``/logout`` (with
``everywhere=1``: every session of the user, decision 0604) and ``/signed-out`` under the app's
mount, as an OIDC client of the identity provider (authorization code + PKCE)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from starlette.responses import RedirectResponse, Response

from switchboard.auth.models import User, credential_stamp
from switchboard.identity import service as identity_service
from switchboard.identity.deps import request_host
from switchboard.kit.crypto import constant_time_equals
from switchboard.kit.errors import ApiError
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants import service as tenants
from switchboard.web import repository
from switchboard.web.cookies import (
    LOGIN_SECONDS,
    SESSION_SECONDS,
    CookieJar,
    PendingLogin,
    WebSession,
    new_csrf,
    new_sid,
)
from switchboard.web.oidc import RelyingParty, SignInFailed
from switchboard.web.pages import NotSignedIn, local_target


class SignedIn(Protocol):
    """What ``/logout`` needs of the app's CSRF-checked user."""

    @property
    def session(self) -> WebSession: ...


@dataclass(frozen=True, slots=True)
class WebApp:
    """One server-rendered app: where it is mounted, its OIDC client and who may use it."""

    mount: str
    client_id: str
    landing: str
    roles: frozenset[str]
    audience: str
    """Who the app is for, in the words of its refusal: ``the console is for admins only``."""


class RoleRefused(ApiError):
    """Signed in, but with a role the web app does not admit."""

    def __init__(self, web: WebApp, username: str, role: str) -> None:
        super().__init__(
            f"{username} has role {role!r}; {web.audience}", code="insufficient_role", status=403
        )


def cookie_jar(request: Request) -> CookieJar:
    jar: CookieJar = request.app.state.cookies
    return jar


def relying_party(request: Request) -> RelyingParty:
    oidc: RelyingParty = request.app.state.oidc
    return oidc


async def signed_in_user(
    request: Request, runtime: RuntimeDep, session: Session
) -> tuple[WebSession, User]:
    """The session cookie's user, while the session is not signed out and the user is still
    enabled, of the same tenant and with the password and security stamp it signed in with, and
    its identity provider session is live (decision 0605); else NotSignedIn."""
    now = int(runtime.clock.timestamp())
    jar = cookie_jar(request)
    found = jar.session(request.cookies.get(jar.session_cookie), now=now)
    if found is None:
        raise NotSignedIn()
    user = await repository.session_user(session, found, now=runtime.clock.now())
    if user is None:
        raise NotSignedIn()
    return found, user


def base_url(runtime: RuntimeDep, request: Request) -> str:
    return f"{runtime.settings.public_scheme}://{request_host(request).lower()}"


def signin_router(
    web: WebApp,
    *,
    signed_in: Callable[..., Any],
    signed_out: Callable[[Request], Response],
) -> APIRouter:
    """``signed_in``: the app's CSRF-checked dependency (logout is a form post)."""
    router = APIRouter()

    @router.get("/login")
    async def login(
        request: Request, runtime: RuntimeDep, switch: str = "", next: str = ""
    ) -> Response:
        """``switch=1`` signs in as another user than the one the provider remembers;
        ``next``: the app's page to show after the sign-in (anything else is ignored)."""
        try:
            started = await relying_party(request).start(
                base_url(runtime, request), fresh=switch == "1"
            )
        except SignInFailed as exc:
            raise ApiError(str(exc), code="sign_in_failed", status=404) from exc
        response = RedirectResponse(started.url, status_code=303)
        now = int(runtime.clock.timestamp())
        pending = PendingLogin(
            state=started.state, nonce=started.nonce, verifier=started.verifier,
            expires=now + LOGIN_SECONDS, next=local_target(web.mount, next) or "",
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
        now = int(runtime.clock.timestamp())
        pending = jar.pending(request.cookies.get(jar.login_cookie), now=now)
        if pending is None or not state or not constant_time_equals(state, pending.state):
            raise ApiError("the sign-in's state does not match; start again", code="sign_in_failed")
        try:
            identity = await relying_party(request).finish(
                base_url(runtime, request), code=code, verifier=pending.verifier,
                nonce=pending.nonce,
            )  # fmt: skip
        except SignInFailed as exc:
            raise ApiError(str(exc), code="sign_in_failed") from exc
        host_tenant = await tenants.resolve_host(session, request_host(request))
        subject = identity.subject
        user = await session.get(User, int(subject)) if subject.isdigit() else None
        if user is None or host_tenant is None or user.tenant_id != host_tenant.id:
            raise ApiError("the ID token names no user of this tenant", code="sign_in_failed")
        if user.role not in web.roles:
            raise RoleRefused(web, user.username, user.role)
        if not identity.sid:
            raise ApiError("the ID token names no session (sid)", code="sign_in_failed")
        target = local_target(web.mount, pending.next) or web.landing
        response = RedirectResponse(target, status_code=303)
        jar.clear(response, jar.login_cookie)
        jar.set_session(
            response,
            WebSession(
                user_id=user.id, tenant_id=user.tenant_id, acting_tenant_id=user.tenant_id,
                csrf=new_csrf(), expires=now + SESSION_SECONDS, id_token=identity.id_token,
                stamp=credential_stamp(user), sid=new_sid(), idp_sid=identity.sid,
            ),
        )  # fmt: skip
        return response

    @router.post("/logout")
    async def logout(
        request: Request, runtime: RuntimeDep, session: Session, user: SignedIn = Depends(signed_in)
    ) -> Response:
        # Ended here, not only in this browser: a copy of the cookie is refused from now on.
        await repository.end_session(session, user.session)
        if (await request.form()).get("everywhere") == "1":  # and in every other browser
            found = await session.get(User, user.session.user_id)
            if found is not None:
                await identity_service.sign_out_everywhere(
                    session, tenant_id=found.tenant_id, username=found.username,
                    clock=runtime.clock,
                )  # fmt: skip
        base = base_url(runtime, request)
        target = f"{base}{web.mount}/signed-out"
        # The provider returns only to the client's registered post-logout address.
        registered = f"{base}{web.mount}/"
        try:
            metadata = await relying_party(request).discover(base)
        except SignInFailed:
            metadata = {}
        end_session = metadata.get("end_session_endpoint")
        if isinstance(end_session, str):
            query = urlencode(
                {
                    "id_token_hint": user.session.id_token,
                    "client_id": web.client_id,
                    "post_logout_redirect_uri": registered,
                }
            )
            target = f"{end_session}?{query}"
        response = RedirectResponse(target, status_code=303)
        jar = cookie_jar(request)
        jar.clear(response, jar.session_cookie)
        return response

    @router.get("/signed-out")
    async def signed_out_page(request: Request) -> Response:
        return signed_out(request)

    return router
