"""``/oidc.ashx/wallet/...``: signing in with the EU Digital Identity Wallet (OpenID4VP 1.0).

``start`` shows the QR code and the same-device link, ``request/{state}`` serves the signed
request object to the wallet, ``response`` takes the wallet's ``direct_post`` answer, and
``status`` is what the waiting page reloads until the sign-in completes."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from switchboard.identity.deps import request_host
from switchboard.identity.errors import OAuthError
from switchboard.identity.issuance import service as issuance
from switchboard.identity.signin import endpoints as signin_pages
from switchboard.identity.signin import options, pages
from switchboard.identity.signin.endpoints import (
    issuer_url,
    login_page,
    parse_authorization,
    secure_cookies,
)
from switchboard.identity.wallet import service as wallet
from switchboard.identity.wallet.models import PresentationRequest
from switchboard.identity.wallet.status import StatusLists
from switchboard.identity.wallet.verify import Invalid
from switchboard.kit.destinations import parse_networks
from switchboard.runtime import PerRuntime, Runtime, RuntimeDep
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant

router = APIRouter(tags=["identity provider (OIDC)"])

BROWSER_COOKIE = "sb_idp_wallet"
COOKIE_PATH = "/oidc.ashx/wallet"
POLL_SECONDS = 2
# External issuers' status lists, kept per process and fetched through the SSRF guard.
status_lists = PerRuntime(
    lambda runtime: StatusLists(allow=parse_networks(runtime.settings.issuer_allow_private))
)

PAGE: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/html": {}}, "description": "The QR code and link; reloads itself"},
    302: {"description": "Signed in: back to the client's redirect URI with `code`"},
    400: {"content": {"text/html": {}}, "description": "Unknown client, request or browser"},
    403: {"content": {"text/html": {}}, "description": "The login page, telling why not"},
    404: {"content": {"text/html": {}}, "description": "No wallet sign-in for this tenant"},
}


@options.register
async def _login_options(session: AsyncSession, tenant: Tenant) -> list[options.LoginOption]:
    if not await wallet.offered(session, tenant=tenant):
        return []
    return [options.LoginOption("Sign in with the EU Digital Identity Wallet", "wallet/start")]


def verifier(runtime: Runtime, request: Request) -> wallet.Verifier:
    """This tenant's verifier: pre-registered client_id = the host name (no ``:``, no prefix)."""
    host = urlsplit(f"//{request_host(request)}").hostname or ""
    issuer = issuer_url(runtime, request)
    staff_vct = issuance.Issuer(identifier=issuer).vct
    return wallet.Verifier(
        client_id=host, base_url=f"{issuer}/wallet", staff_vct=staff_vct, issuer=issuer
    )


def _waiting_page(runtime: Runtime, request: Request, row: PresentationRequest) -> Response:
    link = verifier(runtime, request).wallet_link(row.state)
    qr = pages.qr_svg(link, title="Scan with your wallet")
    return pages.render(
        "wallet.html", static_prefix="../", qr=qr, link=link, state=row.state,
        refresh=POLL_SECONDS, authorize_query=row.authorize_query,
    )  # fmt: skip


@router.get(
    "/wallet/start",
    responses=PAGE,
    response_class=Response,
    operation_id="startWalletSignIn",
    summary="Sign in with the EU Digital Identity Wallet; the authorization request's query",
)
async def start(request: Request, runtime: RuntimeDep) -> Response:
    async with runtime.db.transaction() as session:
        parsed = await parse_authorization(session, request, issuer_url(runtime, request))
        if isinstance(parsed, Response):
            return parsed
        tenant, auth = parsed
        try:
            row, browser_token = await wallet.begin(
                session, tenant=tenant, authorize_query=request.url.query,
                now=runtime.clock.now(),
            )  # fmt: skip
        except wallet.Refused as exc:
            return await login_page(
                session, request, runtime, tenant, auth, message=exc.description,
                status=exc.status, prefix="../",
            )  # fmt: skip
        response = _waiting_page(runtime, request, row)
    response.set_cookie(
        BROWSER_COOKIE, browser_token, max_age=int(wallet.REQUEST_TTL.total_seconds()),
        path=COOKIE_PATH, httponly=True, samesite="lax", secure=secure_cookies(runtime),
    )  # fmt: skip
    return response


@router.get(
    "/wallet/request/{state}",
    responses={
        200: {
            "content": {"application/oauth-authz-req+jwt": {}},
            "description": "The signed authorization request (JAR)",
        },
        400: {"description": "Unknown, expired or answered request (OAuth error)"},
        404: {"description": "No such path, or no tenant serves this host"},
    },
    response_class=Response,
    operation_id="getWalletRequestObject",
    summary="The request object a wallet fetches from request_uri (OpenID4VP 1.0, RFC 9101)",
)
async def request_object(state: str, request: Request, runtime: RuntimeDep) -> Response:
    async with runtime.db.transaction() as session:
        tenant = await tenants.resolve_host(session, request_host(request))
        if tenant is None:
            raise OAuthError("invalid_request", "no tenant serves this host", status=404)
        try:
            signed = await wallet.request_object(
                session, tenant=tenant, state=state, verifier=verifier(runtime, request),
                keyring=runtime.keyring, now=runtime.clock.now(),
            )  # fmt: skip
        except wallet.Refused as exc:
            raise OAuthError("invalid_request", exc.description) from None
    return Response(signed, media_type="application/oauth-authz-req+jwt")


@router.post(
    "/wallet/response",
    responses={
        200: {"description": "Accepted: `{}`; the waiting page completes the sign-in"},
        400: {"description": "Refused presentation, unknown or answered request (OAuth error)"},
    },
    operation_id="postWalletResponse",
    summary="The wallet's answer (response_mode direct_post): vp_token and state, form-encoded",
)
async def response(request: Request, runtime: RuntimeDep) -> dict[str, Any]:
    form = await request.form()
    fields = {k: form.get(k) for k in ("state", "vp_token", "error")}
    values = {k: v if isinstance(v, str) else None for k, v in fields.items()}
    refusal: Invalid | None = None
    # Another issuer's status list comes over the network: fetched first, outside any
    # transaction, so a slow issuer holds no database resource (decision 0029).
    async with runtime.db.transaction(read_only=True) as session:
        tenant = await tenants.resolve_host(session, request_host(request))
        uri = None
        if tenant is not None:
            uri = await wallet.status_list_to_fetch(
                session, tenant=tenant, state=values["state"], vp_token=values["vp_token"],
                verifier=verifier(runtime, request), now=runtime.clock.now(),
            )  # fmt: skip
    if uri is not None:
        await status_lists(runtime).fetch(uri, now=int(runtime.clock.timestamp()))
    async with runtime.db.transaction() as session:
        tenant = await tenants.resolve_host(session, request_host(request))
        if tenant is None:
            raise OAuthError("invalid_request", "no tenant serves this host", status=404)
        try:
            await wallet.accept_response(
                session, tenant=tenant, state=values["state"], vp_token=values["vp_token"],
                error=values["error"], verifier=verifier(runtime, request),
                lists=status_lists(runtime), now=runtime.clock.now(),
            )  # fmt: skip
        except Invalid as exc:
            refusal = exc  # raised after the commit: the spent request stays spent
    if refusal is not None:
        raise OAuthError("invalid_request", refusal.description)
    return {}


@router.get(
    "/wallet/status",
    responses=PAGE,
    response_class=Response,
    operation_id="walletSignInStatus",
    summary="The waiting page's reload: the page again, or the sign-in once the wallet answered",
)
async def status(request: Request, runtime: RuntimeDep) -> Response:
    state = request.query_params.get("state")
    async with runtime.db.transaction() as session:
        tenant = await tenants.resolve_host(session, request_host(request))
        if tenant is None:
            return pages.error_page("no tenant serves this host", status=404)
        now = runtime.clock.now()
        try:
            done = await wallet.finish(
                session, tenant=tenant, state=state, now=now,
                browser_token=request.cookies.get(BROWSER_COOKIE),
            )  # fmt: skip
        except wallet.Refused as exc:
            return await _refused(session, request, runtime, exc)
        if done is None:
            row = await wallet.pending_request(session, tenant=tenant, state=state or "")
            return _waiting_page(runtime, request, row)
        user, query = done
        answer = await signin_pages.signed_in(session, runtime, request, user, query)
    answer.delete_cookie(BROWSER_COOKIE, path=COOKIE_PATH)
    return answer


async def _refused(
    session: AsyncSession, request: Request, runtime: Runtime, refusal: wallet.Refused
) -> Response:
    return await signin_pages.refused_page(
        session, request, runtime, description=refusal.description, status=refusal.status,
        authorize_query=refusal.authorize_query, prefix="../",
    )  # fmt: skip
