"""The linen portal as its own ASGI application (mounted at ``/api``)."""

from __future__ import annotations

from fastapi import FastAPI

from switchboard import __version__
from switchboard.kit.build import build_id
from switchboard.kit.http import JsonResponse, new_api
from switchboard.runtime import Runtime


def create_linen_app(runtime: Runtime) -> FastAPI:
    app = new_api(runtime, title="linen portal API", version=__version__)

    @app.get("/version", summary="Running version and build hash; a health check")
    async def version() -> JsonResponse:
        return JsonResponse({"version": __version__, "build": build_id()})

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_document() -> JsonResponse:
        return JsonResponse(app.openapi())

    return app
