from __future__ import annotations

from typing import Literal

from pydantic import Field

from switchboard.kit.schemas import Schema, StrictInput, echoes
from switchboard.linen.common import Id

GroupKind = Literal["region", "portfolio", "owner", "complex"]


class GroupCreate(StrictInput):
    name: str = Field(min_length=1, max_length=200, description="Unique per tenant")
    kind: GroupKind
    notes: str = Field(default="", max_length=5000)
    property_ids: list[Id] = Field(default_factory=list, max_length=10_000)


class GroupUpdate(StrictInput):
    """Fields left out are unchanged; ``propertyIds`` replaces the whole membership."""

    name: str | None = Field(default=None, min_length=1, max_length=200)
    kind: GroupKind | None = None
    notes: str | None = Field(default=None, max_length=5000)
    property_ids: list[Id] | None = Field(default=None, max_length=10_000)


class GroupOut(Schema):
    id: int
    name: str
    kind: str
    notes: str
    property_ids: list[int]
    created_at: str
    updated_at: str


# A client may send back what it read, edited: the answer's other fields are ignored there.
echoes(GroupUpdate, GroupOut)
