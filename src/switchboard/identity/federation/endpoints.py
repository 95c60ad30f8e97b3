"""``/oidc.ashx/federation/{name}/start`` and ``.../callback``: signing in through a tenant's
external OpenID Connect provider. Both answer a browser (redirects and HTML pages)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from switchboard.identity.deps import request_host
from switchboard.identity.federation import repository
from switchboard.identity.federation import signin as federation
from switchboard.identity.federation.broker import ProviderCache
from switchboard.identity.federation.secrets import ClientSecrets
from switchboard.identity.signin import endpoints as signin_pages
from switchboard.identity.signin import options, pages
from switchboard.identity.signin.endpoints import (
    issuer_url,
    login_page,
    parse_authorization,
    secure_cookies,
)
from switchboard.kit.destinations import parse_networks
from switchboard.runtime import PerRuntime, Runtime, RuntimeDep
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant

router = APIRouter(tags=["identity provider (OIDC)"])

LOGIN_COOKIE = "sb_idp_federation"
COOKIE_PATH = "/oidc.ashx/federation"
# The providers' documents and keys, kept per process; reached through the SSRF guard
# (decision 0025).
providers = PerRuntime(
    lambda runtime: ProviderCache(allow=parse_networks(runtime.settings.federation_allow_private))
)
PAGE_PREFIX = "../../"  # from /oidc.ashx/federation/<name>/ back to the login page's folder

START: dict[int | str, dict[str, Any]] = {
    302: {"description": "To the provider's authorization endpoint (code flow, PKCE S256)"},
    400: {"content": {"text/html": {}}, "description": "Unknown client or redirect URI"},
    404: {
        "content": {"text/html": {}, "application/json": {}},
        "description": "No such enabled provider (a page), or no such path (the API's error body)",
    },
    502: {"content": {"text/html": {}}, "description": "The provider cannot be reached"},
}
CALLBACK: dict[int | str, dict[str, Any]] = {
    302: {"description": "Signed in: back to the client's redirect URI with `code`"},
    400: {"content": {"text/html": {}}, "description": "Unknown, used or foreign state"},
    403: {"content": {"text/html": {}}, "description": "The login page, telling why not"},
    404: {"content": {"application/json": {}}, "description": "No such path"},
}


@options.register
async def _login_options(session: AsyncSession, tenant: Tenant) -> list[options.LoginOption]:
    rows = await repository.list_providers(session, tenant_id=tenant.id, enabled_only=True)
    return [
        options.LoginOption(f"Sign in with {row.display_name}", f"federation/{row.name}/start")
        for row in rows
    ]


def _redirect_uri(request: Request, runtime: RuntimeDep, name: str) -> str:
    return f"{issuer_url(runtime, request)}/federation/{name}/callback"


@router.get(
    "/federation/{name}/start",
    responses=START,
    response_class=Response,
    operation_id="startFederatedSignIn",
    summary="Sign in with an external OpenID Connect provider; the authorization request's query",
)
async def start(name: str, request: Request, runtime: RuntimeDep) -> Response:
    issuer = issuer_url(runtime, request)
    redirect_uri = _redirect_uri(request, runtime, name)
    # Read, ask the provider, write: no transaction is open while the provider answers.
    async with runtime.db.transaction(read_only=True) as session:
        parsed = await parse_authorization(session, request, issuer)
        if isinstance(parsed, Response):
            return parsed
        tenant, auth = parsed
        try:
            provider = await federation.offered(
                session, tenant=tenant, name=name, client_secrets=ClientSecrets.of(runtime)
            )
        except federation.Refused as exc:
            return await login_page(
                session, request, runtime, tenant, auth, message=exc.description,
                status=exc.status, prefix=PAGE_PREFIX,
            )  # fmt: skip
    try:
        started = await federation.authorization(
            provider, redirect_uri=redirect_uri, cache=providers(runtime), now=runtime.clock.now()
        )
        async with runtime.db.transaction() as session:
            await federation.record(
                session, tenant=tenant, provider=provider, started=started,
                authorize_query=request.url.query, box=runtime.box, now=runtime.clock.now(),
            )  # fmt: skip
    except federation.Refused as exc:
        async with runtime.db.transaction(read_only=True) as session:
            return await signin_pages.refused_page(
                session, request, runtime, description=exc.description, status=exc.status,
                authorize_query=request.url.query, prefix=PAGE_PREFIX,
            )  # fmt: skip
    response = pages.redirect(started.url, status=302)
    response.set_cookie(
        LOGIN_COOKIE, started.browser_token, max_age=int(federation.LOGIN_TTL.total_seconds()),
        path=COOKIE_PATH, httponly=True, samesite="lax", secure=secure_cookies(runtime),
    )  # fmt: skip
    return response


@router.get(
    "/federation/{name}/callback",
    responses=CALLBACK,
    response_class=Response,
    operation_id="finishFederatedSignIn",
    summary="Where the provider sends the browser back (code, state, iss)",
)
async def callback(name: str, request: Request, runtime: RuntimeDep) -> Response:
    params = request.query_params
    answer = federation.Callback(
        state=params.get("state"), code=params.get("code"), error=params.get("error"),
        iss=params.get("iss"), browser_token=request.cookies.get(LOGIN_COOKIE),
    )  # fmt: skip
    redirect_uri = _redirect_uri(request, runtime, name)
    # Spend the state, redeem the code at the provider, then sign the user in: three steps, so
    # that no transaction is open while the provider answers.
    async with runtime.db.transaction() as session:
        tenant = await tenants.resolve_host(session, request_host(request))
        if tenant is None:
            return pages.error_page("no tenant serves this host", status=404)
        try:
            taken = await federation.take_answer(
                session, tenant=tenant, name=name, callback=answer, box=runtime.box,
                client_secrets=ClientSecrets.of(runtime), now=runtime.clock.now(),
            )  # fmt: skip
        except federation.Refused as exc:
            # A rendered page, not a raised error: the spent login row is committed.
            return await _refused(session, request, runtime, exc)
    try:
        claims = await federation.redeem(
            taken, redirect_uri=redirect_uri, cache=providers(runtime), clock=runtime.clock
        )
    except federation.Refused as exc:
        async with runtime.db.transaction(read_only=True) as session:
            return await _refused(session, request, runtime, exc)
    async with runtime.db.transaction() as session:
        try:
            user = await federation.finish(
                session, tenant=tenant, answer=taken, claims=claims,
                passwords=runtime.passwords, clock=runtime.clock,
            )  # fmt: skip
        except federation.Refused as exc:
            return await _refused(session, request, runtime, exc)
        # The rest answers the authorization request the sign-in started from.
        response = await signin_pages.signed_in(
            session, runtime, request, user, taken.authorize_query
        )
    response.delete_cookie(LOGIN_COOKIE, path=COOKIE_PATH)
    return response


async def _refused(
    session: AsyncSession, request: Request, runtime: Runtime, refusal: federation.Refused
) -> Response:
    return await signin_pages.refused_page(
        session, request, runtime, description=refusal.description, status=refusal.status,
        authorize_query=refusal.authorize_query, prefix=PAGE_PREFIX,
    )  # fmt: skip
