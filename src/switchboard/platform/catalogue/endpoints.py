"""``GET /api.ashx/v1``: the unauthenticated catalogue of every route."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from switchboard import __version__
from switchboard.kit.build import build_id
from switchboard.platform.catalogue.schemas import Catalogue, CatalogueRoute

router = APIRouter()

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
    "/api.ashx/v1",
    operation_id="getCatalogue",
    response_model=Catalogue,
    summary="Catalogue of all routes, with the build string and links to the interactive "
    "reference (`docs`) and the OpenAPI description (`openapi`)",
    tags=["catalogue"],
)
async def catalogue(request: Request) -> Catalogue:
    return Catalogue(
        name="switchboard platform API",
        version="v1",
        software_version=__version__,
        build=build_id(),
        docs="/docs",
        openapi="/openapi.json",
        routes=catalogue_routes(request.app.openapi()),
    )
