"""The identity provider as its own ASGI application (mounted at ``/oidc.ashx``)."""

from __future__ import annotations

from fastapi import FastAPI

from switchboard import __version__
from switchboard.identity.endpoints import router
from switchboard.identity.federation.endpoints import router as federation_router
from switchboard.identity.issuance.endpoints import router as issuance_router
from switchboard.identity.signin.endpoints import router as signin_router
from switchboard.identity.wallet.endpoints import router as wallet_router
from switchboard.kit.http import new_api
from switchboard.runtime import Runtime


def create_identity_app(runtime: Runtime) -> FastAPI:
    app = new_api(runtime, title="switchboard identity provider", version=__version__)
    app.include_router(router)
    app.include_router(signin_router)
    app.include_router(federation_router)
    app.include_router(wallet_router)
    app.include_router(issuance_router)
    return app
