"""What the OpenAPI document's ``webhooks`` section promises a receiver, as checks: the body's
JSON Schema of an event (a 2020-12 validator over the document's own components) and its
delivery headers."""

from __future__ import annotations

from typing import Any

import jsonschema_rs

DIALECT = "https://json-schema.org/draft/2020-12/schema"
# Headers of any HTTP request, not the sender's: the transport's own, and the body's type
# (the request body's media type in the document; OpenAPI ignores a Content-Type parameter).
TRANSPORT = {"host", "content-type", "content-length", "accept", "accept-encoding"}


def operation(document: dict[str, Any], event: str) -> dict[str, Any]:
    found: dict[str, Any] = document["webhooks"][event]["post"]
    return found


def validator(document: dict[str, Any], schema: dict[str, Any]) -> jsonschema_rs.Validator:
    """``schema`` compiled with the document's components, formats checked."""
    rooted = {"$schema": DIALECT, **schema, "components": document["components"]}
    return jsonschema_rs.validator_for(rooted, validate_formats=True)


def body_validator(document: dict[str, Any], event: str) -> jsonschema_rs.Validator:
    """The validator of the body ``event``'s delivery is documented with."""
    media = operation(document, event)["requestBody"]["content"]["application/json"]
    return validator(document, media["schema"])


def data_schema(document: dict[str, Any], event: str) -> dict[str, Any]:
    """The ``data`` schema of ``event``, resolved from the components."""
    media = operation(document, event)["requestBody"]["content"]["application/json"]
    schemas = document["components"]["schemas"]
    envelope = schemas[media["schema"]["$ref"].rsplit("/", 1)[-1]]
    found: dict[str, Any] = schemas[envelope["properties"]["data"]["$ref"].rsplit("/", 1)[-1]]
    return found


def body_problems(document: dict[str, Any], event: str, body: Any) -> list[str]:
    return [str(error.message) for error in body_validator(document, event).iter_errors(body)]


def header_problems(document: dict[str, Any], event: str, headers: dict[str, str]) -> list[str]:
    """Each documented header missing or out of its schema, and each header sent but not
    documented; empty when the request's headers are as documented."""
    sent = {name.lower(): value for name, value in headers.items()}
    found = []
    documented = set()
    for parameter in operation(document, event)["parameters"]:
        assert parameter["in"] == "header"
        name = parameter["name"].lower()
        documented.add(name)
        if name not in sent:
            found.append(f"{name}: absent")
            continue
        schema = parameter["schema"]
        value: Any = int(sent[name]) if schema.get("type") == "integer" else sent[name]
        found += [f"{name}: {e.message}" for e in validator(document, schema).iter_errors(value)]
    found += [f"{name}: sent, not documented" for name in set(sent) - documented - TRANSPORT]
    return found
