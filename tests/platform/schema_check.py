"""What a real response breaks of its operation's schema in the served OpenAPI document.

Stricter than a JSON Schema validator on the points clients build on: a field the document
requires is present, a field it does not allow null is never null, every field sent is
documented, and an enumerated value is one of the list. Schemathesis's response check validates
the same schemas but never learns that a field described as nullable is in fact left out (both
pass), so the tests below pair this check with the server's answers on real data.
"""

from __future__ import annotations

import re
from typing import Any

_METHODS = {"get", "put", "post", "delete", "patch"}


def operation_for(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    """The operation whose path template matches ``path`` (a literal path first)."""
    paths: dict[str, Any] = document["paths"]
    if path in paths and method in paths[path]:
        return dict(paths[path][method])
    for template, item in paths.items():
        pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
        if method in item and re.fullmatch(pattern, path):
            return dict(item[method])
    raise AssertionError(f"{method.upper()} {path} is not in the document")


def response_schema(operation: dict[str, Any], status: int) -> dict[str, Any]:
    response = operation["responses"].get(str(status))
    assert response is not None, f"status {status} is not documented"
    schema: dict[str, Any] = response["content"]["application/json"]["schema"]
    return schema


def problems(document: dict[str, Any], schema: dict[str, Any], value: Any, where: str) -> list[str]:
    """Each way ``value`` breaks ``schema``, as ``where: what``; empty when it conforms."""
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        found = [problems(document, branch, value, where) for branch in branches]
        return [] if [] in found else min(found, key=len)
    types = schema.get("type")
    allowed = set(types) if isinstance(types, list) else {types} if types else set()
    if value is None:
        return [] if "null" in allowed or not allowed else [f"{where}: null, not allowed null"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is not one of {schema['enum']}"]
    if isinstance(value, dict):
        return _object_problems(document, schema, value, where)
    if isinstance(value, list) and "items" in schema:
        return [
            problem
            for index, item in enumerate(value)
            for problem in problems(document, schema["items"], item, f"{where}[{index}]")
        ]
    kind = _json_type(value)
    if allowed and kind not in allowed and not (kind == "integer" and "number" in allowed):
        return [f"{where}: a {kind}, documented as {sorted(allowed)}"]
    return []


def _object_problems(
    document: dict[str, Any], schema: dict[str, Any], value: dict[str, Any], where: str
) -> list[str]:
    found = []
    properties: dict[str, Any] = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            found.append(f"{where}.{key}: absent, documented as required")
    for key, item in value.items():
        if key in properties:
            found += problems(document, properties[key], item, f"{where}.{key}")
        elif properties and not schema.get("additionalProperties"):
            found.append(f"{where}.{key}: sent, not documented")
    return found


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def response_schemas(document: dict[str, Any]) -> set[str]:
    """The names of the components a successful JSON response is built of, nested ones too."""
    names: set[str] = set()
    found = [
        media.get("schema") or {}
        for item in document["paths"].values()
        for method, operation in item.items()
        if method in _METHODS
        for status, response in operation["responses"].items()
        if status.startswith("2")
        for kind, media in response.get("content", {}).items()
        if kind.endswith("json")
    ]
    while found:
        node = found.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.rsplit("/", 1)[-1] not in names:
                names.add(ref.rsplit("/", 1)[-1])
                found.append(document["components"]["schemas"][ref.rsplit("/", 1)[-1]])
            found += list(node.values())
        elif isinstance(node, list):
            found += node
    return names


def nullable(schema: dict[str, Any]) -> bool:
    types = schema.get("type")
    if types == "null" or (isinstance(types, list) and "null" in types):
        return True
    return any(nullable(branch) for branch in schema.get("anyOf", []) + schema.get("oneOf", []))
