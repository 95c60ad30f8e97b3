"""The browsable reference at ``/api/docs``: Swagger UI served from the portal itself.

The assets ship in the ``swagger-ui-py`` wheel, so the page works with no internet connection.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles


def _assets() -> Path:
    """The static folder of the ``swagger_ui`` package, found without importing it."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the swagger-ui-py package is missing; run `make install`")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


ASSETS = _assets()

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>linen portal API reference</title>
<link rel="icon" type="image/png" href="{root}/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="{root}/docs/assets/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="{root}/docs/assets/swagger-ui-bundle.js"></script>
<script src="{root}/docs/init.js"></script>
</body>
</html>
"""

ANONYMOUS = frozenset({"/version", "/openapi.json", "/docs"})

INIT = """window.ui = SwaggerUIBundle({
  url: "%s/openapi.json",
  dom_id: "#reference",
  deepLinking: true,
  validatorUrl: null,
  tryItOutEnabled: false,
  persistAuthorization: false,
  layout: "BaseLayout"
});
"""


def install(app: FastAPI) -> None:
    app.mount("/docs/assets", StaticFiles(directory=ASSETS), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def reference(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return HTMLResponse(PAGE.format(root=root))

    @app.get("/docs/init.js", include_in_schema=False)
    async def init_script(request: Request) -> Response:
        root = request.scope.get("root_path", "")
        return Response(INIT % root, media_type="text/javascript")


def complete_openapi(schema: dict[str, Any]) -> None:
    """Finish FastAPI's document: anonymous paths, no 422 (bad input is 400 here), and the
    JSON part of the invoice uploads as named schemas."""
    from switchboard.linen.invoices.endpoints import AdminInvoiceMeta
    from switchboard.linen.invoices.schemas import InvoiceMeta

    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for model in (InvoiceMeta, AdminInvoiceMeta):
        body = model.model_json_schema(by_alias=True, ref_template="#/components/schemas/{model}")
        components.update(body.pop("$defs", {}))
        components[model.__name__] = body
    for path, item in schema.get("paths", {}).items():
        for operation in item.values():
            operation.get("responses", {}).pop("422", None)
            if path in ANONYMOUS:
                operation["security"] = []
            content = operation.get("requestBody", {}).get("content", {})
            form = content.get("multipart/form-data", {}).get("schema", {})
            metadata = form.get("properties", {}).get("metadata")
            if metadata is not None:
                name = metadata["description"].removeprefix("JSON: ")
                form["properties"]["metadata"] = {
                    "$ref": f"#/components/schemas/{name}",
                    "description": "JSON metadata and lines (sent as a part of type "
                    "application/json)",
                }
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
