"""The linen portal as its own ASGI application (mounted at ``/api``).

Anonymous: ``/api/docs`` (offline reference), ``/api/openapi.json`` and ``/api/version``.
Everything else needs an OIDC bearer (Data API, ``/api/v1``) or a laundry key
(Laundry API, ``/api/laundry``).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRouter
from pydantic import BaseModel

from switchboard import __version__
from switchboard.kit.build import build_id
from switchboard.kit.http import JsonResponse, new_api
from switchboard.linen import docs
from switchboard.linen.groups.endpoints import router as groups_router
from switchboard.linen.invoices.endpoints import router as invoices_router
from switchboard.linen.item_types.endpoints import router as item_types_router
from switchboard.linen.laundries.endpoints import router as laundries_router
from switchboard.linen.laundry_api.endpoints import router as laundry_api_router
from switchboard.linen.properties.endpoints import router as properties_router
from switchboard.linen.sheets.endpoints import balance_router
from switchboard.linen.sheets.endpoints import router as sheets_router
from switchboard.linen.statistics.endpoints import router as statistics_router
from switchboard.linen.vault.endpoints import router as vault_router
from switchboard.runtime import Runtime

DESCRIPTION = """The linen portal: properties and their groupings, the item-type catalogue,
laundries with price lists and API keys, linen sheets (order and delivery note in one),
laundry invoices with their PDF, the vault of access codes, and statistics.

* **Data API** (`/api/v1/...`): `Authorization: Bearer <OIDC access token>` from the identity
  provider of the tenant serving the host. `admin` reads and writes; `power-user` and `user`
  read (writes are 403). API keys are refused (401). A token of another tenant is 401.
* **Laundry API** (`/api/laundry/...`): `Authorization: Bearer lk_...`, the laundry's own key.
* Errors are `{error, error_description}`; collections are `{data, total, limit, offset, next}`;
  money is integer minor units plus an ISO 4217 currency; times are ISO 8601 UTC.
"""

ROUTERS: list[APIRouter] = [
    properties_router,
    balance_router,
    groups_router,
    item_types_router,
    laundries_router,
    sheets_router,
    invoices_router,
    vault_router,
    statistics_router,
    laundry_api_router,
]


class VersionOut(BaseModel):
    version: str
    build: str
    database: str


def create_linen_app(runtime: Runtime) -> FastAPI:
    app = new_api(runtime, title="linen portal API", version=__version__, description=DESCRIPTION)
    app.servers = [{"url": "/api", "description": "this portal"}]
    for router in ROUTERS:
        app.include_router(router)

    @app.get(
        "/version",
        summary="Running version and build hash; a health check",
        response_model=VersionOut,
        responses={503: {"model": VersionOut, "description": "The database does not answer"}},
        tags=["service"],
    )
    async def version() -> JsonResponse:
        database = "ok" if await runtime.db.answers() else "unavailable"
        body = {"version": __version__, "build": build_id(), "database": database}
        return JsonResponse(body, status_code=200 if database == "ok" else 503)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            docs.complete_openapi(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_document() -> JsonResponse:
        return JsonResponse(app.openapi())

    docs.install(app)
    return app
