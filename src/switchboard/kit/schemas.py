"""The wire schema base: camelCase out, camelCase or PascalCase in."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable
from types import UnionType
from typing import Annotated, Any, Generic, TypeVar, Union, get_args, get_origin

from pydantic import (
    AliasChoices,
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    model_validator,
)
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


def _not_null(schema: dict[str, Any], values: tuple[str, ...] = ()) -> None:
    """``X | None`` documented as ``X``: the field is left out, never sent as null."""
    branches = [b for b in schema.pop("anyOf", []) if b.get("type") != "null"]
    if len(branches) == 1:
        schema.update(branches[0])
    elif branches:
        schema["anyOf"] = branches
    schema.pop("default", None)
    if values:
        schema["enum"] = list(values)


def sometimes_absent(description: str | None = None, *, values: Iterable[str] = ()) -> Any:
    """A response field the server leaves out, rather than send null, when it has no value
    (the serializer drops it: ``response_model_exclude_none`` or the model's own). The OpenAPI
    document then says what clients meet: not required, and never null when present; ``values``
    as for ``one_of``."""
    extra = functools.partial(_not_null, values=tuple(values))
    return Field(default=None, description=description, json_schema_extra=extra)


def one_of(values: Iterable[str], description: str | None = None) -> Any:
    """A text field (or each text of a list field) whose values are exactly ``values``: its
    ``enum`` in the OpenAPI document. Pass the constant the code validates with or assigns
    from, so the document cannot drift from the code."""
    enum = list(values)

    def document(schema: dict[str, Any]) -> None:
        target = schema["items"] if schema.get("type") == "array" else schema
        target["enum"] = enum

    return Field(description=description, json_schema_extra=document)


def contains_nul(value: Any) -> bool:
    """Whether a decoded JSON value holds a NUL character anywhere (no database stores one)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(k) or contains_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(contains_nul(v) for v in value)
    return False


# ``Model.model_validate(fields, context=FORM)``: the body comes from an HTML form (text values)
FORM: dict[str, bool] = {"form": True}


class StrictInput(Schema):
    """Base of request bodies: unknown fields are ignored, wrong types are 400."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        if contains_nul(data):
            raise ValueError("text must not contain NUL characters")
        return data

    @model_validator(mode="before")
    @classmethod
    def _strict_scalars(cls, data: Any, info: ValidationInfo) -> Any:
        """JSON types as the document states them: ``0`` is no boolean, ``true`` no number and
        ``0`` no date (pydantic's lax mode would convert each). A web form's fields are all
        text: pages validate with ``context=FORM`` and get pydantic's usual conversions."""
        if not isinstance(data, dict) or (info.context or {}).get("form"):
            return data
        for keys, kind, camel in _strict_fields(cls):
            for key in keys:
                value = data.get(key)
                if value is not None and not _is_json_type(value, kind):
                    raise ValueError(f"{camel}: {_EXPECTED[kind]}")
        return data


_EXPECTED = {
    bool: "must be true or false",
    int: "must be an integer",
    float: "must be a number",
    dt.date: "must be a date string (YYYY-MM-DD)",
    dt.datetime: "must be a date-time string",
}


@functools.cache  # once per model: the fields do not change, bodies arrive on every request
def _strict_fields(model: type[BaseModel]) -> tuple[tuple[tuple[str, ...], type, str], ...]:
    """Each field pydantic would coerce: the keys it may arrive under, its scalar type and its
    camelCase name."""
    found = []
    for name, field in model.model_fields.items():
        kind = _scalar_kind(field.annotation)
        if kind is not None:
            found.append(((name, to_camel(name), to_pascal(name)), kind, to_camel(name)))
    return tuple(found)


def _scalar_kind(annotation: Any) -> type | None:
    """The scalar type of a field (``X`` or ``X | None``) whose JSON type pydantic would coerce."""
    if get_origin(annotation) in (Union, UnionType):
        candidates = [a for a in get_args(annotation) if a is not type(None)]
    else:
        candidates = [annotation]
    if len(candidates) != 1:
        return None
    kind = candidates[0]
    if get_origin(kind) is Annotated:  # ``Annotated[int, Field(...)] | None``
        kind = get_args(kind)[0]
    return kind if kind in _EXPECTED else None


def _is_json_type(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind in (int, float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str)


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
