"""The linen web app as an ASGI application, mounted at ``/app`` by the root application."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import ASGIApp

from switchboard.linen.web.deps import LINEN, STATIC, check_csrf, render
from switchboard.linen.web.pages import ROUTERS
from switchboard.runtime import Runtime
from switchboard.web.cookies import CookieJar
from switchboard.web.oidc import RelyingParty
from switchboard.web.pages import install_pages
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
            signed_in=check_csrf,
            signed_out=lambda request: render(request, "signed_out.html", None),
        )
    )
    for router in ROUTERS:
        app.include_router(router)
    install_pages(app, static=STATIC, mount=LINEN.mount, render=render)
    return app
