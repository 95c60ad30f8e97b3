"""The console as an ASGI application, mounted at ``/admin`` by the root application."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from switchboard.console.deps import STATIC, NotSignedIn, render
from switchboard.console.oidc import RelyingParty
from switchboard.console.pages import ROUTERS
from switchboard.console.session import CookieJar
from switchboard.kit.errors import ApiError
from switchboard.kit.http import describe_validation
from switchboard.runtime import Runtime

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
    """The console's security headers on every response, error pages included."""

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


def create_console_app(runtime: Runtime, *, backchannel: ASGIApp | None = None) -> FastAPI:
    """``backchannel``: the application serving ``/oidc.ashx`` (the root one, in one process)."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.runtime = runtime
    app.state.cookies = CookieJar(
        runtime.settings.secret_key, secure=runtime.settings.public_scheme == "https"
    )
    app.state.oidc = RelyingParty(clock=runtime.clock, backchannel=backchannel)
    for router in ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(PageHeaders)

    async def on_not_signed_in(request: Request, _exc: Exception) -> Response:
        return RedirectResponse("/admin/login", status_code=303)

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return render(
            request, "error.html", None, status=exc.status, error=exc.code,
            description=exc.description,
        )  # fmt: skip

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError | ValidationError)
        description = describe_validation(exc.errors())
        return render(
            request, "error.html", None, status=400, error="invalid_request",
            description=description,
        )  # fmt: skip

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return render(
            request, "error.html", None, status=exc.status_code, error="not_found"
            if exc.status_code == 404 else "invalid_request", description=str(exc.detail),
        )  # fmt: skip

    app.add_exception_handler(NotSignedIn, on_not_signed_in)
    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(ValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
    return app
