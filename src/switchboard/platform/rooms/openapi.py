"""The ``sfu-mode`` request in the platform's OpenAPI description.

``POST /signal.ashx?sfu-mode=sfu|mesh&room=<name>`` shares its method and path with the
whitelist's ``POST /signal.ashx?whitelist=add|write``, and an OpenAPI path holds one operation
per method: the whitelist's operation is extended with the ``sfu-mode`` and ``room`` parameters,
the optional ``{reason}`` body, the ``SfuModeReply`` answer and the 502 of a failed flip
(decision 0860)."""

from __future__ import annotations

import copy
from typing import Any

from switchboard.platform.rooms.schemas import MODES, SfuModeBody, SfuModeReply
from switchboard.platform.rooms.signaling import ROOM_NAME

PATH = "/signal.ashx"
REF = "#/components/schemas/{model}"

DESCRIPTION = (
    "\n\nWith `sfu-mode` instead of `whitelist`: flip the media mode of the room named by `room` "
    "(docs/rooms.md). The optional body `{reason}` replaces the event's reason "
    "`admin-override`. Authorised by an admin bearer of the Host's tenant or by "
    "`X-Platform-Admin-Signature` over `sfu-mode|<tenant>|<room>|<mode>|<bodyLen>`. The answer "
    "is `SfuModeReply` (`changed` false when the room already was in that mode); a failed "
    "promote or demote keeps the previous mode and answers 502 with `ok` false and `error` "
    "(503 when no media bridge is configured)."
)


def _parameters() -> list[dict[str, Any]]:
    return [
        {
            "name": "sfu-mode",
            "in": "query",
            "required": False,
            "description": "`sfu` (promote) or `mesh` (demote) the room named by `room`; "
            "takes the place of `whitelist`",
            "schema": {"type": "string", "enum": list(MODES)},
        },
        {
            "name": "room",
            "in": "query",
            "required": False,
            "description": "With `sfu-mode`: the room's name",
            "schema": {"type": "string", "pattern": ROOM_NAME.pattern},
        },
    ]


def _with(schema: dict[str, Any], extra: dict[str, Any], key: str) -> dict[str, Any]:
    """``schema`` or ``extra`` (``key``: ``oneOf`` where the options exclude each other)."""
    options = list(schema[key]) if key in schema else [schema]
    return {key: [*options, extra]}


def describe_sfu_mode(document: dict[str, Any]) -> None:
    """Extend the ``POST /signal.ashx`` operation of ``document`` with the sfu-mode request."""
    operation = document.get("paths", {}).get(PATH, {}).get("post")
    if operation is None:
        return
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas[SfuModeBody.__name__] = SfuModeBody.model_json_schema(ref_template=REF)
    schemas[SfuModeReply.__name__] = SfuModeReply.model_json_schema(
        ref_template=REF, mode="serialization"
    )
    reply_ref = {"$ref": REF.format(model=SfuModeReply.__name__)}
    operation["summary"] = (
        operation.get("summary", "") + "; or flip a room's media mode (`sfu-mode`)"
    )
    operation["description"] = operation.get("description", "") + DESCRIPTION
    operation.setdefault("parameters", []).extend(_parameters())
    body = operation.setdefault("requestBody", {"content": {"application/json": {"schema": {}}}})
    media = body["content"]["application/json"]
    # SfuModeBody forbids other members, so no whitelist body matches it (and {} only it).
    sfu_body = {"$ref": REF.format(model=SfuModeBody.__name__)}
    media["schema"] = _with(media["schema"], sfu_body, "oneOf")
    body["required"] = False  # the sfu-mode body is optional (a whitelist body is not)
    responses = operation.setdefault("responses", {})
    ok = responses["200"]["content"]["application/json"]
    ok["schema"] = _with(ok["schema"], reply_ref, "anyOf")  # replies may share members
    responses["502"] = {
        "description": "sfu-mode: the bridge failed the promote or demote; the mode is kept",
        "content": {"application/json": {"schema": copy.deepcopy(reply_ref)}},
    }
    error_ref = {"$ref": REF.format(model="ErrorBody")}
    responses["503"] = {
        "description": "sfu-mode: no media bridge is configured (`ok` false), or the room's"
        " fan-out is unreachable (`room_fanout_unavailable`); the mode is kept",
        "content": {
            "application/json": {"schema": {"anyOf": [copy.deepcopy(reply_ref), error_ref]}}
        },
    }
