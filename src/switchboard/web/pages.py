"""Security headers, hashed static URLs, the CSRF check and form helpers of the web apps."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import urlencode, urlsplit

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from switchboard.kit.clock import iso_utc
from switchboard.kit.crypto import constant_time_equals
from switchboard.kit.errors import ApiError, BadRequest
from switchboard.kit.http import describe_validation

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; "
    "frame-ancestors 'none'"
)
PAGE_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]


class PageHeaders:
    """The security headers on every response, error pages included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + PAGE_HEADERS
            await send(message)

        await self.app(scope, receive, with_headers)


SHARED_STATIC = Path(__file__).parent / "static"
SHARED_TEMPLATES = Path(__file__).parent / "templates"


def static_urls(folder: Path, prefix: str) -> Callable[[str], str]:
    """``static(name)``: an asset's URL with its content hash, so a page never gets a stale copy.
    ``name`` is the app's own (``folder``) or one of the shared ones (``base.css``)."""

    @cache
    def static_url(name: str) -> str:
        found = folder / name if (folder / name).exists() else SHARED_STATIC / name
        digest = hashlib.sha256(found.read_bytes()).hexdigest()[:12]
        return f"{prefix}/{name}?v={digest}"

    return static_url


Person = TypeVar("Person")


class PageRenderer(Generic[Person]):
    """A web app's pages: its own ``folder/templates`` first, then the shared ones (the form
    macros of ``_forms.html``); every page gets ``iso``, ``static`` (``folder/static`` under
    ``static_prefix``), the request, and the signed-in person under the name ``person``
    (``operator`` in the console, ``viewer`` in the linen app)."""

    def __init__(self, folder: Path, *, static_prefix: str, person: str) -> None:
        self.templates = Jinja2Templates(directory=[folder / "templates", SHARED_TEMPLATES])
        self.templates.env.globals["iso"] = iso_utc
        self.templates.env.globals["static"] = static_urls(folder / "static", static_prefix)
        self.person = person

    def __call__(
        self,
        request: Request,
        template: str,
        person: Person | None,
        *,
        status: int = 200,
        **context: Any,
    ) -> HTMLResponse:
        context.update({"request": request, self.person: person})
        return self.templates.TemplateResponse(request, template, context, status_code=status)


class NotSignedIn(Exception):
    """No valid session: the browser is sent to the sign-in."""


MAX_TARGET = 2048
# a path segment ``.`` or ``..``, spelled out or percent-encoded: a browser would resolve it
_DOT_SEGMENT = re.compile(r"(^|/)(\.|%2e){1,2}(/|$)", re.IGNORECASE)
_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]")
SIGN_IN_PATHS = ("/login", "/callback", "/logout", "/signed-out")


def local_target(mount: str, value: str | None) -> str | None:
    """``value`` if it is a path (and query) of the app mounted at ``mount``, to be sent back
    to after the sign-in; None for anything else (another app, another host, a scheme, a
    ``//host`` or ``\\host`` form, dot segments, the sign-in's own routes): no open redirect."""
    if not value or len(value) > MAX_TARGET or _UNSAFE.search(value):
        return None
    if not value.startswith(mount + "/"):
        return None
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or parts.fragment or _DOT_SEGMENT.search(parts.path):
        return None
    if parts.path in {mount + p for p in SIGN_IN_PATHS}:
        return None
    return value


def sign_in_url(mount: str, request: Request) -> str:
    """``<mount>/login``, with ``next`` the page asked for when it is a page to come back to:
    a plain GET (not an htmx fragment or an event stream)."""
    url = f"{mount}/login"
    if request.method != "GET" or "hx-request" in request.headers:
        return url
    if "text/event-stream" in request.headers.get("accept", ""):
        return url
    path = request.url.path
    query = request.url.query
    target = local_target(mount, path + (f"?{query}" if query else ""))
    return f"{url}?{urlencode({'next': target})}" if target else url


Render = Callable[..., Response]


def install_pages(app: FastAPI, *, static: Path, mount: str, render: Render) -> None:
    """The static files (the app's and the shared ones), the security headers, and every error
    as the app's own error page; no session sends the browser to ``<mount>/login``."""
    app.mount(
        "/static",
        StaticFiles(directory=static, packages=[("switchboard.web", "static")]),
        name="static",
    )
    app.add_middleware(PageHeaders)

    async def on_not_signed_in(request: Request, _exc: Exception) -> Response:
        return RedirectResponse(sign_in_url(mount, request), status_code=303)

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return render(
            request, "error.html", None, status=exc.status, error=exc.code,
            description=exc.description, back=came_from(mount, request),
        )  # fmt: skip

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError | ValidationError)
        return render(
            request, "error.html", None, status=400, error="invalid_request",
            description=describe_form_errors(exc.errors()), back=came_from(mount, request),
        )  # fmt: skip

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return render(
            request, "error.html", None, status=exc.status_code, error="not_found"
            if exc.status_code == 404 else "invalid_request", description=str(exc.detail),
            back=came_from(mount, request),
        )  # fmt: skip

    app.add_exception_handler(NotSignedIn, on_not_signed_in)
    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(ValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)


def came_from(mount: str, request: Request) -> str | None:
    """The page the request came from (its Referer), when it is a page of the same app on the
    same host: where an error page leads back to, so that a refused form is one click away."""
    referer = request.headers.get("referer", "")
    try:
        parts = urlsplit(referer)
    except ValueError:
        return None
    host = request.headers.get("host", "")
    if parts.scheme not in ("http", "https") or not host or parts.netloc.lower() != host.lower():
        return None
    return local_target(mount, parts.path + (f"?{parts.query}" if parts.query else ""))


def describe_form_errors(errors: Sequence[Any]) -> str:
    """``describe_validation`` for a person at a form: a value that does not match a field's
    pattern is said in words naming the field, not with the regular expression."""
    plain = [
        {**err, "msg": "the value is not in the form this field takes"}
        if err.get("type") == "string_pattern_mismatch"
        else err
        for err in errors
    ]
    return describe_validation(plain)


class CsrfRefused(ApiError):
    """A form came without the session's CSRF token."""

    def __init__(self) -> None:
        super().__init__(
            "the form's CSRF token is missing or stale; reload the page and try again",
            code="csrf_failed",
            status=403,
        )


async def require_csrf(request: Request, expected: str) -> None:
    """Every state-changing request carries the session's token, in the form or a header."""
    presented = request.headers.get("x-csrf-token")
    if presented is None:
        form = await request.form()
        value = form.get("csrf")
        presented = value if isinstance(value, str) else None
    if not presented or not constant_time_equals(presented, expected):
        raise CsrfRefused()


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
