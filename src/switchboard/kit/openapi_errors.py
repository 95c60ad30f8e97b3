"""Bad input in the OpenAPI documents: 400 with the error body, never FastAPI's 422.

Every sub-application renders a request that fails validation (a body, a query or a path
parameter) as 400 ``{error: "invalid_request", error_description}`` (``kit.http``). FastAPI
still documents a 422 ``HTTPValidationError`` for every operation that takes input; this
replaces it with the 400 the application answers and drops the schemas nothing refers to then.
"""

from __future__ import annotations

from typing import Any

from switchboard.kit.openapi_limits import ERROR_BODY

BAD_INPUT = "Bad input (code `invalid_request`)"
UNUSED = ("HTTPValidationError", "ValidationError")


def document_bad_input(schema: dict[str, Any]) -> None:
    for item in schema.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            responses = operation.get("responses", {})
            if responses.pop("422", None) is not None and "400" not in responses:
                responses["400"] = {
                    "description": BAD_INPUT,
                    "content": {"application/json": {"schema": ERROR_BODY}},
                }
    components = schema.get("components", {}).get("schemas", {})
    for name in UNUSED:
        components.pop(name, None)
