"""The platform API as its own ASGI application (paths ``/api.ashx/v1/...``, ``/signal.ashx``)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRouter

from switchboard import __version__
from switchboard.kit import apidocs
from switchboard.kit.http import JsonResponse, new_api
from switchboard.kit.openapi_errors import document_bad_input
from switchboard.kit.openapi_limits import document_body_limit
from switchboard.platform.apikeys.endpoints import router as apikeys_router
from switchboard.platform.callbacks.endpoints import router as bridge_router
from switchboard.platform.calls.endpoints import router as calls_router
from switchboard.platform.catalogue.endpoints import router as catalogue_router
from switchboard.platform.numbers.endpoints import router as numbers_router
from switchboard.platform.rooms.endpoints import router as rooms_router
from switchboard.platform.rooms.openapi import describe_sfu_mode
from switchboard.platform.rooms.page import router as room_page_router
from switchboard.platform.rooms.page import static_files as room_static
from switchboard.platform.routing.endpoints import router as routing_router
from switchboard.platform.shares.endpoints import public as share_page_router
from switchboard.platform.shares.endpoints import router as shares_router
from switchboard.platform.tenants.endpoints import router as tenants_router
from switchboard.platform.transcripts.endpoints import router as transcripts_router
from switchboard.platform.webhooks.endpoints import router as webhooks_router
from switchboard.platform.webhooks.openapi import describe_webhooks
from switchboard.platform.whitelist.endpoints import router as whitelist_router
from switchboard.runtime import Runtime

DESCRIPTION = """Outbound AI calls, virtual numbers, transcripts, routing tables, webhooks and
the outbound whitelist. Every endpoint except `GET /api.ashx/v1`, the public transcript share
page `GET /share/{token}` and the identity provider's browser endpoints needs
`Authorization: Bearer <token>` with `role=admin`: an OIDC access token from
`/oidc.ashx/token` or an API key (`ak_...`). Errors are `{error, error_description}`. The events
pushed to webhook subscribers are under `webhooks`, one entry per event name."""

# FastAPI tries the routers in this order, each by its routes: the busiest paths (POST and GET
# /api.ashx/v1/calls) come first (docs/benchmarks/calls.md, 2026-11-27). The order is also the
# OpenAPI description's and the reference page's.
ROUTERS: list[APIRouter] = [
    calls_router,
    catalogue_router,
    apikeys_router,
    webhooks_router,
    tenants_router,
    numbers_router,
    transcripts_router,
    shares_router,
    share_page_router,
    routing_router,
    rooms_router,  # before the whitelist: it takes POST /signal.ashx?sfu-mode=... only
    whitelist_router,
    bridge_router,
]


def create_platform_app(runtime: Runtime, *, extra_openapi: FastAPI | None = None) -> FastAPI:
    """``extra_openapi``: the identity provider, whose paths join this description."""
    app = new_api(
        runtime, title="switchboard platform API", version=__version__, description=DESCRIPTION
    )
    app.mount("/rooms/static", room_static, name="room-static")
    for router in ROUTERS:
        app.include_router(router)
    app.include_router(room_page_router)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            if extra_openapi is not None:
                extra = extra_openapi.openapi()
                for path, item in extra.get("paths", {}).items():
                    schema["paths"][f"/oidc.ashx{path}"] = item
                components = schema.setdefault("components", {}).setdefault("schemas", {})
                components.update(extra.get("components", {}).get("schemas", {}))
            describe_sfu_mode(schema)
            document_bad_input(schema)
            document_body_limit(schema)
            describe_webhooks(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    apidocs.install(app, title="switchboard platform API reference")

    @app.get("/openapi.json", include_in_schema=False)
    @app.get("/.well-known/openapi.json", include_in_schema=False)
    async def openapi_document() -> JsonResponse:
        return JsonResponse(app.openapi())

    return app
