from __future__ import annotations

from pydantic import Field

from switchboard.kit.schemas import Schema, StrictInput


class ApiKeyCreate(StrictInput):
    name: str = Field(default="", max_length=128, description="Operator label")


class ApiKeyItem(Schema):
    id: str
    name: str
    prefix: str = Field(description="First characters of the key, to recognise it")
    created_by: str
    created_at_utc: str
    last_used_utc: str | None
    revoked_at_utc: str | None


class ApiKeyCreated(ApiKeyItem):
    key: str = Field(description="The API key. Shown once; only its SHA-256 hash is kept.")
