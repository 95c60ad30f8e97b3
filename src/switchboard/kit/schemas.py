"""The wire schema base: camelCase out, camelCase or PascalCase in."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import AliasChoices, AliasGenerator, BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel, to_pascal


def _either_case(name: str) -> AliasChoices:
    return AliasChoices(to_camel(name), to_pascal(name))


class Schema(BaseModel):
    """Base of every request and response body."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=_either_case, serialization_alias=to_camel),
        populate_by_name=True,
        serialize_by_alias=True,
        extra="ignore",
        from_attributes=True,
    )


class PascalSchema(BaseModel):
    """Base of the few responses the spec echoes in PascalCase (inbound-route writes)."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(
            validation_alias=_either_case, serialization_alias=to_pascal
        ),
        populate_by_name=True,
        serialize_by_alias=True,
        from_attributes=True,
    )


def contains_nul(value: Any) -> bool:
    """Whether a decoded JSON value holds a NUL character anywhere (no database stores one)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(k) or contains_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(contains_nul(v) for v in value)
    return False


class StrictInput(Schema):
    """Base of request bodies: unknown fields are ignored, wrong types are 400."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        if contains_nul(data):
            raise ValueError("text must not contain NUL characters")
        return data


class ErrorBody(BaseModel):
    """``{error, error_description}``: clients branch on ``error``."""

    error: str
    error_description: str


class Ok(Schema):
    ok: bool = True


T = TypeVar("T")


class Page(Schema, Generic[T]):
    """The collection envelope of every list endpoint."""

    data: list[T]
    total: int
    limit: int
    offset: int
    next: str | int | None


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Bad input"},
    401: {"model": ErrorBody, "description": "Bearer missing or invalid"},
    403: {"model": ErrorBody, "description": "Bearer lacks the required role"},
}
