"""The browsable reference at ``/api/docs``: Swagger UI served from the portal itself.

The assets ship in the ``swagger-ui-py`` wheel, so the page works with no internet connection.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from switchboard.kit import apidocs
from switchboard.kit.openapi_errors import document_bad_input
from switchboard.kit.openapi_limits import document_body_limit
from switchboard.kit.openapi_links import add_item_links

ANONYMOUS = frozenset({"/version", "/openapi.json", "/docs"})


def install(app: FastAPI) -> None:
    apidocs.install(app, title="linen portal API reference")


def complete_openapi(schema: dict[str, Any]) -> None:
    """Finish FastAPI's document: anonymous paths, bad input as 400 (never 422), the JSON
    part of the invoice uploads as named schemas, and links from created items to their
    operations."""
    from switchboard.linen.invoices.endpoints import AdminInvoiceMeta
    from switchboard.linen.invoices.schemas import InvoiceMeta

    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for model in (InvoiceMeta, AdminInvoiceMeta):
        body = model.model_json_schema(by_alias=True, ref_template="#/components/schemas/{model}")
        components.update(body.pop("$defs", {}))
        components[model.__name__] = body
    for path, item in schema.get("paths", {}).items():
        for operation in item.values():
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
    document_bad_input(schema)
    add_item_links(schema)
    document_body_limit(schema)
