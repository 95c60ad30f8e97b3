"""The wire schema base: camelCase out, camelCase or PascalCase in."""

from __future__ import annotations

import datetime as dt
import difflib
import functools
from collections.abc import Iterable
from types import UnionType
from typing import Annotated, Any, ClassVar, Generic, TypeVar, Union, get_args, get_origin

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
    """Base of request bodies: wrong types, unknown fields and a field given twice (``did`` and
    ``Did``) are 400 (decision 0033). The OpenAPI document says so with
    ``additionalProperties: false``. A web form's fields (``context=FORM``) are the page's to
    pick: its other inputs (the CSRF token, the button) are not refused."""

    model_config = ConfigDict(
        extra="ignore",
        str_strip_whitespace=False,
        json_schema_extra={"additionalProperties": False},
    )

    # the keys of the answer a client may send back whole, changed (``echoes``): not refused
    _echoed: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict) or (info.context or {}).get("form"):
            return data
        names = _key_names(cls)
        given: dict[str, str] = {}
        for key in data:
            name = names.get(key) if isinstance(key, str) else None
            if name is None and key in cls._echoed:
                continue  # a field of the resource as read (``id``): ignored
            if name is None:
                close = difflib.get_close_matches(str(key), sorted(set(names.values())), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise ValueError(f"{key}: not a field of this request{hint}")
            if name in given:
                raise ValueError(f"{name}: given twice, as {given[name]} and {key}")
            given[name] = key
        return data

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


def echoes(body: type[StrictInput], answer: type[BaseModel]) -> None:
    """``body`` may be ``answer`` sent back whole with some fields changed (a client that reads
    a resource, edits it and sends it back): the answer's fields ``body`` lacks (``id``,
    ``createdAt``) are ignored there, not refused as unknown, and so are those of the objects
    and lists of objects the two share by field name (decision 0033)."""
    body._echoed = body._echoed | frozenset(_key_names(answer)) - frozenset(_key_names(body))
    for name, field in body.model_fields.items():
        inner, outer = _model_of(field.annotation), None
        if name in answer.model_fields:
            outer = _model_of(answer.model_fields[name].annotation)
        if inner is not None and outer is not None and issubclass(inner, StrictInput):
            echoes(inner, outer)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model of a field typed ``Model``, ``Model | None`` or ``list[Model]``."""
    for candidate in (annotation, *get_args(annotation)):
        if get_origin(candidate) is list:
            candidate = get_args(candidate)[0]
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


@functools.cache  # once per model: the fields do not change
def _key_names(model: type[BaseModel]) -> dict[str, str]:
    """Every key a field of ``model`` may arrive under (its name, its camelCase and PascalCase
    aliases), mapped to its camelCase name."""
    found: dict[str, str] = {}
    for name, field in model.model_fields.items():
        camel = to_camel(name)
        keys = {name, camel, to_pascal(name)}
        alias = field.validation_alias
        if isinstance(alias, str):
            keys.add(alias)
        elif isinstance(alias, AliasChoices):
            keys.update(choice for choice in alias.choices if isinstance(choice, str))
        if field.alias:
            keys.add(field.alias)
        found.update(dict.fromkeys(keys, camel))
    return found


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
