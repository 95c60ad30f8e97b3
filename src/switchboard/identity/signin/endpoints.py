"""``/oidc.ashx/authorize`` (the login page) and ``/oidc.ashx/end_session`` (RP-initiated logout).

Both answer HTML, never the JSON error body: a browser is on the other end.
"""

from __future__ import annotations

from importlib import resources
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jws import extract_compact
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import FormData
from starlette.responses import Response

from switchboard.auth.bearer import issuer_for
from switchboard.identity import clients, lockout
from switchboard.identity import service as identity
from switchboard.identity.deps import request_host
from switchboard.identity.errors import OAuthError
from switchboard.identity.signin import options, pages
from switchboard.identity.signin import service as signin
from switchboard.kit.clientip import client_ip, parse_networks
from switchboard.kit.http import first_repeated, media_type, not_utf8
from switchboard.runtime import Runtime, RuntimeDep
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant

router = APIRouter(tags=["identity provider (OIDC)"])

_CSS = resources.files("switchboard.identity.signin").joinpath("static/signin.css").read_bytes()

HTML: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/html": {}}, "description": "An HTML page"}
}
REDIRECTS: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/html": {}}, "description": "The login page"},
    302: {"description": "Back to the client's redirect URI with `code` (or `error`) and `state`"},
    303: {
        "description": "After a successful sign-in: back to the redirect URI with `code`; the "
        "IdP session and device cookies are set"
    },
    400: {
        "content": {"text/html": {}},
        "description": "Unknown client or redirect URI, or a request that is not valid UTF-8",
    },
    415: {
        "content": {"text/html": {}},
        "description": "A form posted otherwise than as application/x-www-form-urlencoded",
    },
    429: {
        "content": {"text/html": {}},
        "description": "The user, or this browser (its device cookie), is locked out for a while",
    },
}


SIGN_OUT: dict[int | str, dict[str, Any]] = {
    **HTML,
    302: {"description": "To the registered post_logout_redirect_uri"},
    400: {
        "content": {"text/html": {}},
        "description": "An id_token_hint or post_logout_redirect_uri that is not accepted, a "
        "repeated parameter, or a request that is not valid UTF-8",
    },
    415: REDIRECTS[415],
}


def secure_cookies(runtime: Runtime) -> bool:
    return runtime.settings.public_scheme == "https"


def issuer_url(runtime: Runtime, request: Request) -> str:
    return issuer_for(runtime.settings.public_scheme, request_host(request).lower())


def describe_browser(request: Request, runtime: Runtime) -> tuple[str, str]:
    """The User-Agent and client address a new browser session is shown with (decision 0605);
    the address by the rule of ``kit.clientip``, as share views and room peers are."""
    peer = request.client.host if request.client else None
    address = client_ip(
        peer, request.headers.get("x-forwarded-for"),
        parse_networks(runtime.settings.trusted_proxies),
    )  # fmt: skip
    return request.headers.get("user-agent", ""), address


def _back_to_client(redirect_uri: str, params: dict[str, str | None], *, status: int) -> Response:
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return pages.redirect(
        f"{redirect_uri}{'&' if '?' in redirect_uri else '?'}{query}", status=status
    )


def error_redirect(error: signin.RedirectError, issuer: str) -> Response:
    params = {"error": error.code, "error_description": error.description, "state": error.state}
    return _back_to_client(error.redirect_uri, {**params, "iss": issuer}, status=302)


async def login_page(
    session: AsyncSession,
    request: Request,
    runtime: Runtime,
    tenant: Tenant,
    auth: signin.AuthorizationRequest,
    *,
    message: str = "",
    username: str = "",
    status: int = 200,
    headers: dict[str, str] | None = None,
    prefix: str = "",
) -> Response:
    """The login page; ``prefix`` leads from the answering URL's folder back to ``/oidc.ashx/``
    (its links are relative)."""
    csrf, fresh = pages.csrf_token(request)
    response = pages.render(
        "login.html",
        prefix=prefix,
        static_prefix=prefix,
        options=await options.for_tenant(session, tenant),
        query=request.url.query,
        status=status,
        headers=headers,
        tenant=tenant.name,
        client_id=auth.client.client_id,
        action=f"{prefix}authorize?{request.url.query}",
        csrf=csrf,
        message=message,
        username=username,
    )
    if fresh:
        pages.set_cookie(
            response, pages.CSRF_COOKIE, csrf, secure=secure_cookies(runtime), max_age=3600
        )
    return response


async def code_response(
    session: AsyncSession,
    runtime: Runtime,
    request: Request,
    tenant: Tenant,
    auth: signin.AuthorizationRequest,
    browser: Any,
    *,
    status: int,
) -> Response:
    issuer = issuer_url(runtime, request)
    code = await signin.issue_code(
        session, tenant=tenant, request=auth, browser=browser, issuer=issuer,
        now=runtime.clock.now(),
    )  # fmt: skip
    params = {"code": code, "state": auth.state, "iss": issuer}
    return _back_to_client(auth.redirect_uri, params, status=status)


async def parse_authorization(
    session: AsyncSession, request: Request, issuer: str
) -> tuple[Tenant, signin.AuthorizationRequest] | Response:
    """The Host's tenant and the validated request, or the page or redirect that answers it."""
    tenant = await tenants.resolve_host(session, request_host(request))
    if tenant is None:
        return pages.error_page("no tenant serves this host", status=404)
    if not_utf8(request.scope["query_string"]):
        return pages.error_page(NOT_UTF8)
    try:
        auth = await signin.parse_request(
            session, tenant=tenant, params=request.query_params.multi_items()
        )
    except signin.PageError as exc:
        return pages.error_page(exc.description, status=exc.status)
    except signin.RedirectError as exc:
        return error_redirect(exc, issuer)
    return tenant, auth


NOT_UTF8 = "the request holds characters that are not valid UTF-8"
FORM = "application/x-www-form-urlencoded"


async def posted_form(request: Request) -> FormData | Response:
    """The posted form, from a URL-encoded body (what an HTML form without files sends); an
    error page for another kind of body (415), or for bytes that are not UTF-8 (the parser would
    replace them, and ``state`` would go back to the client altered)."""
    raw = await request.body()  # kept by the request: the form is parsed from it
    if raw and media_type(request) != FORM:
        return pages.error_page(f"a form is posted as {FORM}", status=415)
    if not_utf8(raw):
        return pages.error_page(NOT_UTF8)
    return await request.form()


def answering(request: Request, query: str) -> Request:
    """The request as if it were the authorization request a sign-in started from (its query,
    the same cookies), so the login page and the code are those of that request."""
    return Request({**request.scope, "query_string": query.encode()}, request.receive)


async def refused_page(
    session: AsyncSession,
    request: Request,
    runtime: Runtime,
    *,
    description: str,
    status: int,
    authorize_query: str | None,
    prefix: str = "",
) -> Response:
    """Why a sign-in by other means failed: the login page again with the reason when the
    original authorization request is known, else an error page."""
    if authorize_query is None:
        return pages.error_page(description, status=status)
    request = answering(request, authorize_query)
    parsed = await parse_authorization(session, request, issuer_url(runtime, request))
    if isinstance(parsed, Response):
        return parsed
    tenant, auth = parsed
    return await login_page(
        session, request, runtime, tenant, auth, message=description, status=status,
        prefix=prefix,
    )  # fmt: skip


async def signed_in(
    session: AsyncSession, runtime: Runtime, request: Request, user: Any, authorize_query: str
) -> Response:
    """A sign-in by other means succeeded: the IdP session starts (its cookie set) and the
    authorization request it started from is answered with a code."""
    request = answering(request, authorize_query)
    parsed = await parse_authorization(session, request, issuer_url(runtime, request))
    if isinstance(parsed, Response):
        return parsed
    tenant, auth = parsed
    now = runtime.clock.now()
    ttl = runtime.settings.idp_session_ttl
    previous = await signin.current_session(
        session, tenant=tenant, token=request.cookies.get(pages.SESSION_COOKIE), now=now
    )
    user_agent, address = describe_browser(request, runtime)
    browser, token = await signin.start_session(
        session, tenant=tenant, user=user, now=now, ttl_seconds=ttl, replacing=previous,
        user_agent=user_agent, address=address,
    )  # fmt: skip
    response = await code_response(session, runtime, request, tenant, auth, browser, status=302)
    pages.set_cookie(
        response, pages.SESSION_COOKIE, token, secure=secure_cookies(runtime), max_age=ttl
    )
    return response


@router.get(
    "/authorize",
    responses=REDIRECTS,
    response_class=Response,
    summary="Authorization endpoint: code flow with PKCE (S256); shows the login page",
)
async def authorize(request: Request, runtime: RuntimeDep) -> Response:
    issuer = issuer_url(runtime, request)
    async with runtime.db.transaction() as session:
        parsed = await parse_authorization(session, request, issuer)
        if isinstance(parsed, Response):
            return parsed
        tenant, auth = parsed
        now = runtime.clock.now()
        browser = await signin.current_session(
            session, tenant=tenant, token=request.cookies.get(pages.SESSION_COOKIE), now=now
        )
        if signin.must_sign_in(auth, browser, now):
            if "none" in auth.prompt:
                error = signin.RedirectError(
                    "login_required", "the user is not signed in",
                    redirect_uri=auth.redirect_uri, state=auth.state,
                )  # fmt: skip
                return error_redirect(error, issuer)
            return await login_page(session, request, runtime, tenant, auth)
        # Registered clients are first-party (the tenant's operator registers them): no consent.
        return await code_response(session, runtime, request, tenant, auth, browser, status=302)


@router.post(
    "/authorize",
    responses=REDIRECTS,
    response_class=Response,
    summary="The login form (username, password and the CSRF token, posted to the URL of the "
    "authorization request), or an authorization request whose parameters are the form's "
    "(OpenID Connect Core 3.1.2.1)",
)
async def authorize_submit(request: Request, runtime: RuntimeDep) -> Response:
    issuer = issuer_url(runtime, request)
    form = await posted_form(request)
    if isinstance(form, Response):
        return form
    if not request.url.query and "csrf_token" not in form:
        return await _posted_authorization(request, runtime, form)
    # a field given twice is no value (RFC 6749 §3.1): the form is refused as incomplete
    fields = {k: form.getlist(k) for k in ("username", "password", "csrf_token")}
    values = {
        k: v[0] if len(v) == 1 and isinstance(v[0], str) and "\x00" not in v[0] else None
        for k, v in fields.items()
    }
    settings = runtime.settings
    csrf_ok = pages.csrf_ok(request, values["csrf_token"])
    # Argon2 before the write transaction, which would otherwise hold it (decision 0032).
    checked = None
    if csrf_ok:
        checked = await identity.precheck_password(
            runtime.db,
            runtime.passwords,
            host=request_host(request),
            username=values["username"],
            password=values["password"],
        )
    async with runtime.db.transaction() as session:
        parsed = await parse_authorization(session, request, issuer)
        if isinstance(parsed, Response):
            return parsed
        tenant, auth = parsed
        username = values["username"] or ""
        if not csrf_ok:
            message = "The form expired. Please sign in again."
            return await login_page(
                session, request, runtime, tenant, auth, message=message, status=400
            )
        cookies = lockout.device_cookies(settings.secret_key)
        devices = cookies.open(request.cookies.get(lockout.DEVICE_COOKIE), now=runtime.clock.now())
        try:
            user = await identity.check_password(
                session, tenant=tenant, clock=runtime.clock, username=username,
                password=values["password"], max_failures=settings.login_max_failures,
                lockout_seconds=settings.login_lockout_seconds, passwords=runtime.passwords,
                unknown=lockout.unknown_names(settings.secret_key), devices=devices,
                checked=checked,
            )  # fmt: skip
        except OAuthError as exc:
            # A rendered page (not a raised error): the failure counted above is committed.
            locked = exc.status == 429
            return await login_page(
                session, request, runtime, tenant, auth,
                message=exc.description if locked else "Invalid username or password.",
                username=username[:128], status=exc.status,
                headers=exc.headers if locked else None,
            )  # fmt: skip
        now = runtime.clock.now()
        previous = await signin.current_session(
            session, tenant=tenant, token=request.cookies.get(pages.SESSION_COOKIE), now=now
        )
        user_agent, address = describe_browser(request, runtime)
        browser, token = await signin.start_session(
            session, tenant=tenant, user=user, now=now,
            ttl_seconds=settings.idp_session_ttl, replacing=previous,
            user_agent=user_agent, address=address,
        )  # fmt: skip
        response = await code_response(session, runtime, request, tenant, auth, browser, status=303)
    pages.set_cookie(
        response, pages.SESSION_COOKIE, token, secure=secure_cookies(runtime),
        max_age=settings.idp_session_ttl,
    )  # fmt: skip
    # The browser is known again for this user: wrong passwords here lock it alone (0031).
    known = lockout.remember(devices, user, now=now, ttl_seconds=settings.login_device_ttl)
    pages.set_cookie(
        response, lockout.DEVICE_COOKIE, cookies.seal(known), secure=secure_cookies(runtime),
        max_age=settings.login_device_ttl, path=pages.DEVICE_COOKIE_PATH,
    )  # fmt: skip
    return response


async def _posted_authorization(request: Request, runtime: Runtime, form: FormData) -> Response:
    """An authorization request sent as a form post: answered as if its parameters were the
    query of a GET, so the login page's form posts back to that URL as it does for a GET."""
    items = [(key, value) for key, value in form.multi_items() if isinstance(value, str)]
    return await authorize(answering(request, urlencode(items)), runtime)


def _hint_claims(runtime: Runtime, hint: str, issuer: str) -> dict[str, Any]:
    """Claims of an ID token we signed for this issuer (it may have expired: a hint only)."""
    try:
        kid = str(extract_compact(hint.encode()).headers().get("kid", ""))
        key = runtime.keyring.public_key(kid)
        if key is None:
            raise ValueError("unknown key")
        claims = dict(jwt.decode(hint, key, algorithms=["RS256"]).claims)
    except (JoseError, ValueError, UnicodeError):
        raise signin.PageError("id_token_hint is not an ID token of this provider") from None
    if claims.get("iss") != issuer or claims.get("token_use") != "id":
        raise signin.PageError("id_token_hint is not an ID token of this provider")
    return claims


async def _logout(
    request: Request, runtime: Runtime, *, confirmed: bool, form: FormData | None = None
) -> Response:
    issuer = issuer_url(runtime, request)
    if not_utf8(request.scope["query_string"]):
        return pages.error_page(NOT_UTF8)
    items: list[tuple[str, object]] = list(request.query_params.multi_items())
    if form is not None:
        items += form.multi_items()
    repeated = first_repeated(items)
    if repeated is not None:
        return pages.error_page(f"the parameter {repeated!r} is repeated")
    params = {k: v for k, v in items if isinstance(v, str)}
    async with runtime.db.transaction() as session:
        tenant = await tenants.resolve_host(session, request_host(request))
        if tenant is None:
            return pages.error_page("no tenant serves this host", status=404)
        await runtime.keyring.ensure_signer(session)
        try:
            hint = params.get("id_token_hint")
            claims = _hint_claims(runtime, hint, issuer) if hint else {}
            client_id = str(claims.get("aud") or params.get("client_id") or "")
            if claims and params.get("client_id") not in (None, client_id):
                raise signin.PageError("client_id differs from the id_token_hint's audience")
            target = params.get("post_logout_redirect_uri")
            if target:
                client = await clients.find_client(
                    session, tenant_id=tenant.id, client_id=client_id
                )
                if client is None:
                    raise signin.PageError("post_logout_redirect_uri needs a known client")
                if not await clients.is_registered(session, client, clients.POST_LOGOUT, target):
                    raise signin.PageError("post_logout_redirect_uri is not registered")
        except signin.PageError as exc:
            return pages.error_page(exc.description, status=exc.status)
        browser = await signin.current_session(
            session, tenant=tenant, token=request.cookies.get(pages.SESSION_COOKIE),
            now=runtime.clock.now(),
        )  # fmt: skip
        hinted = browser is None or str(claims.get("sub", "")) == str(browser.user_id)
        if not (claims and hinted) and not confirmed:
            # Without a hint of the signed-in user, the request may be forged by another site
            # (any user's ID token is easy to come by): ask the user first.
            csrf, fresh = pages.csrf_token(request)
            confirm = pages.render(
                "confirm_logout.html", tenant=tenant.name, csrf=csrf,
                action=f"end_session?{request.url.query}",
            )  # fmt: skip
            if fresh:
                pages.set_cookie(
                    confirm, pages.CSRF_COOKIE, csrf, secure=secure_cookies(runtime), max_age=3600
                )
            return confirm
        await signin.end_session(
            session, token=request.cookies.get(pages.SESSION_COOKIE), now=runtime.clock.now()
        )
    response: Response
    if target:
        response = _back_to_client(target, {"state": params.get("state")}, status=302)
    else:
        response = pages.render("signed_out.html")
    pages.delete_cookie(response, pages.SESSION_COOKIE, secure=secure_cookies(runtime))
    return response


@router.get(
    "/end_session",
    responses=SIGN_OUT,
    response_class=Response,
    summary="RP-initiated logout: ends the browser's session at the identity provider",
)
async def end_session(request: Request, runtime: RuntimeDep) -> Response:
    return await _logout(request, runtime, confirmed=False)


@router.post(
    "/end_session",
    responses=SIGN_OUT,
    response_class=Response,
    summary="RP-initiated logout by form post (or the confirmation of the sign-out page)",
)
async def end_session_submit(request: Request, runtime: RuntimeDep) -> Response:
    form = await posted_form(request)
    if isinstance(form, Response):
        return form
    submitted = form.get("csrf_token")
    confirmed = isinstance(submitted, str) and pages.csrf_ok(request, submitted)
    return await _logout(request, runtime, confirmed=confirmed, form=form)


@router.get("/static/signin.css", include_in_schema=False)
async def stylesheet() -> Response:
    return Response(_CSS, media_type="text/css")
