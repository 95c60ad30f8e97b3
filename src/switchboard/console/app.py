"""The console as an ASGI application, mounted at ``/admin`` by the root application."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import ASGIApp

from switchboard.console.deps import CONSOLE, STATIC, render
from switchboard.console.pages import ROUTERS
from switchboard.runtime import Runtime
from switchboard.web.cookies import CONSOLE_COOKIE, CookieJar
from switchboard.web.oidc import RelyingParty
from switchboard.web.pages import install_pages


def create_console_app(runtime: Runtime, *, backchannel: ASGIApp | None = None) -> FastAPI:
    """``backchannel``: the application serving ``/oidc.ashx`` (the root one, in one process)."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.runtime = runtime
    app.state.cookies = CookieJar(
        runtime.settings.secret_key, name=CONSOLE_COOKIE, path=CONSOLE.mount,
        secure=runtime.settings.public_scheme == "https",
    )  # fmt: skip
    app.state.oidc = RelyingParty(
        client_id=CONSOLE.client_id, mount=CONSOLE.mount, clock=runtime.clock,
        backchannel=backchannel,
    )  # fmt: skip
    for router in ROUTERS:
        app.include_router(router)
    install_pages(app, static=STATIC, mount=CONSOLE.mount, render=render)
    return app
