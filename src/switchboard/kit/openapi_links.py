"""OpenAPI links from a created resource to the operations on it.

A ``POST`` to a collection (``/v1/properties``) that answers ``201`` with an object carrying
``id`` gets one link per operation of the item path below it (``/v1/properties/{property_id}``),
passing ``$response.body#/id`` as its own path parameter and the collection's path parameters
as they were sent. Clients and test generators follow these
instead of guessing relations from field names (decision 0912).
"""

from __future__ import annotations

import re
from typing import Any

ITEM_PARAM = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")
METHODS = ("get", "put", "patch", "delete")


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref", "")
    if ref.startswith("#/components/schemas/"):
        found: dict[str, Any] = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
        return found
    return node


def _has_id(schema: dict[str, Any], response: dict[str, Any]) -> bool:
    body = response.get("content", {}).get("application/json", {}).get("schema", {})
    return "id" in _resolve(schema, body).get("properties", {})


def add_item_links(schema: dict[str, Any]) -> None:
    paths: dict[str, dict[str, Any]] = schema.get("paths", {})
    for path, item in paths.items():
        created = item.get("post", {}).get("responses", {}).get("201")
        if created is None or not _has_id(schema, created):
            continue
        for other, operations in paths.items():
            head, _, last = other.rpartition("/")
            param = ITEM_PARAM.match(last)
            if head != path or param is None:
                continue
            links = created.setdefault("links", {})
            given = {name: f"$request.path.{name}" for name in re.findall(r"\{(\w+)\}", path)}
            for method in METHODS:
                operation = operations.get(method)
                if operation is None or "operationId" not in operation:
                    continue
                links[operation["operationId"]] = {
                    "operationId": operation["operationId"],
                    "parameters": {**given, param.group(1): "$response.body#/id"},
                    "description": f"{method.upper()} the created item",
                }
