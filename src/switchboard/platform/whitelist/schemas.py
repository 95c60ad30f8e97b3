"""Wire shapes of ``/signal.ashx?whitelist=...``."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from switchboard.kit.schemas import Schema, StrictInput

ENTRIES_MAX = 10_000


class WhitelistEntry(Schema):
    number: str
    comment: str


class WhitelistList(Schema):
    tenant: str
    numbers: list[WhitelistEntry] = Field(description="Operator-typed order")
    count: int


class WhitelistAddBody(StrictInput):
    number: str = Field(description="1 to 32 characters")
    comment: str | None = Field(default=None, description="Cut to 200 characters")


class WhitelistEntryIn(StrictInput):
    number: str
    comment: str | None = None


class WhitelistWriteBody(StrictInput):
    numbers: list[WhitelistEntryIn] = Field(max_length=ENTRIES_MAX)


class WhitelistAdded(Schema):
    ok: bool
    tenant: str
    number: str
    comment: str
    added: bool = Field(description="False when the number was already listed")
    count: int


class WhitelistWritten(Schema):
    ok: bool
    tenant: str
    count: int


# Unknown keys are refused at every level, as in every JSON body (decision 0033).
_ENTRY_IN: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["number"],
    "properties": {
        "number": {"type": "string", "minLength": 1, "maxLength": 32},
        "comment": {"type": "string", "description": "Cut to 200 characters"},
    },
}

POST_BODY_OPENAPI: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "oneOf": [
                        {**_ENTRY_IN, "title": "WhitelistAddBody (whitelist=add)"},
                        {
                            "title": "WhitelistWriteBody (whitelist=write)",
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["numbers"],
                            "properties": {"numbers": {"type": "array", "items": _ENTRY_IN}},
                        },
                    ]
                }
            }
        },
    }
}
