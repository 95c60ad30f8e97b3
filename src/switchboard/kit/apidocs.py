"""A browsable API reference: Swagger UI served by the application itself, from the assets
in the ``swagger-ui-py`` wheel, so the page works with no internet connection."""

from __future__ import annotations

import html
import importlib.util
from pathlib import Path

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
# The reference page loads only its own assets and description; Swagger UI sets inline styles
# (hence ``'unsafe-inline'`` for styles only) and data: images. It may not be framed.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; "
        "object-src 'none'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
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


def install(app: FastAPI, *, title: str) -> None:
    """``/docs`` (the page), ``/docs/init.js`` and ``/docs/assets/`` on ``app``, reading the
    description at the application's ``/openapi.json``."""
    app.mount("/docs/assets", StaticFiles(directory=ASSETS), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def reference(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return HTMLResponse(PAGE.format(root=root, title=html.escape(title)), headers=PAGE_HEADERS)

    @app.get("/docs/init.js", include_in_schema=False)
    async def init_script(request: Request) -> Response:
        root = request.scope.get("root_path", "")
        return Response(INIT % root, media_type="text/javascript")
