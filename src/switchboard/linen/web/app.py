"""The linen web app as an ASGI application, mounted at ``/app`` by the root application."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from switchboard.kit.errors import ApiError
from switchboard.kit.http import describe_validation
from switchboard.linen.web.deps import LINEN, STATIC, NotSignedIn, RoleRefused, check_csrf, render
from switchboard.linen.web.pages import ROUTERS
from switchboard.runtime import Runtime
from switchboard.web.cookies import CookieJar
from switchboard.web.oidc import RelyingParty
from switchboard.web.pages import PageHeaders
from switchboard.web.signin import signin_router


def create_linen_web_app(runtime: Runtime, *, backchannel: ASGIApp | None = None) -> FastAPI:
    """``backchannel``: the application serving ``/oidc.ashx`` (the root one, in one process)."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.runtime = runtime
    app.state.cookies = CookieJar(
        runtime.settings.secret_key, name="sb_linen", path=LINEN.mount,
        secure=runtime.settings.public_scheme == "https",
    )  # fmt: skip
    app.state.oidc = RelyingParty(
        client_id=LINEN.client_id, mount=LINEN.mount, clock=runtime.clock,
        backchannel=backchannel,
    )  # fmt: skip
    app.include_router(
        signin_router(
            LINEN,
            refuse=RoleRefused,
            signed_in=check_csrf,
            signed_out=lambda request: render(request, "signed_out.html", None),
        )
    )
    for router in ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(PageHeaders)

    async def on_not_signed_in(request: Request, _exc: Exception) -> Response:
        return RedirectResponse(f"{LINEN.mount}/login", status_code=303)

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return render(
            request, "error.html", None, status=exc.status, error=exc.code,
            description=exc.description,
        )  # fmt: skip

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError | ValidationError)
        return render(
            request, "error.html", None, status=400, error="invalid_request",
            description=describe_validation(exc.errors()),
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
