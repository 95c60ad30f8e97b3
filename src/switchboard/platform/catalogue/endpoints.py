"""``GET /api.ashx/v1``: the unauthenticated catalogue of every route.

Nothing in the catalogue depends on the request or the tenant: the body is rendered once per
application (from its OpenAPI description, itself built once) and served as stored bytes. It is
rebuilt only if the application's OpenAPI description is replaced.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response

from switchboard import __version__
from switchboard.kit.build import build_id
from switchboard.platform.catalogue.schemas import Catalogue, CatalogueRoute

router = APIRouter()
CATALOGUE_PATH = "/api.ashx/v1"

HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def catalogue_routes(openapi: dict[str, Any]) -> list[CatalogueRoute]:
    routes = []
    for path, item in openapi.get("paths", {}).items():
        for method in HTTP_METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            routes.append(
                CatalogueRoute(
                    method=method.upper(),
                    path=path,
                    summary=operation.get("summary", ""),
                    auth=bool(operation.get("security")),
                )
            )
    return routes


@router.get(
    CATALOGUE_PATH,
    operation_id="getCatalogue",
    response_model=Catalogue,
    summary="Catalogue of all routes, with the build string and links to the interactive "
    "reference (`docs`) and the OpenAPI description (`openapi`)",
    tags=["catalogue"],
)
@router.get(CATALOGUE_PATH + "/", include_in_schema=False)  # the spec's base address, as written
async def catalogue(request: Request) -> Response:
    """Served by ``fastpath.catalogue_answer`` in the full application; here for the standalone
    platform app, the OpenAPI description and any request the fast path passes on."""
    return Response(rendered_catalogue(request.app), media_type="application/json")


def rendered_catalogue(app: FastAPI) -> bytes:
    openapi = app.openapi()
    cached: tuple[dict[str, Any], bytes] | None = getattr(app.state, "catalogue", None)
    if cached is not None and cached[0] is openapi:
        return cached[1]
    body = Catalogue(
        name="switchboard platform API",
        version="v1",
        software_version=__version__,
        build=build_id(),
        docs="/docs",
        openapi="/openapi.json",
        routes=catalogue_routes(openapi),
    ).model_dump_json(by_alias=True)
    app.state.catalogue = (openapi, body.encode())
    return body.encode()
