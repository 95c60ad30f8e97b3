"""The request-body limit in the OpenAPI documents.

Every request body is limited (``SWITCHBOARD_MAX_BODY_BYTES``, larger for the uploads and a
whitelist write; ``kit.http.BodyLimitMiddleware``), and a body above it is answered 413 with
the error body before it is read further. Each operation that takes a body says so.
"""

from __future__ import annotations

from typing import Any

ERROR_BODY = {"$ref": "#/components/schemas/ErrorBody"}
TOO_LARGE = "The request body is above its limit (code `payload_too_large`)"


def document_body_limit(schema: dict[str, Any]) -> None:
    for item in schema.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict) or "requestBody" not in operation:
                continue
            operation.setdefault("responses", {}).setdefault(
                "413",
                {"description": TOO_LARGE, "content": {"application/json": {"schema": ERROR_BODY}}},
            )
