from __future__ import annotations

from typing import Literal

from pydantic import Field

from switchboard.kit.schemas import Schema, StrictInput, echoes
from switchboard.linen.common import ID_MAX

Category = Literal["bed", "bath", "kitchen", "other"]
Unit = Literal["piece", "set"]
CODE_PATTERN = r"^[A-Z0-9][A-Z0-9_-]{0,63}$"
WEIGHT = "Grams of one unit; a set left at 0 weighs what its components do"
COMPONENTS = (
    "A set's pieces (`unit` `set` only); a set its laundry's price list does not name costs "
    "their unit prices, and whatever of its weight they do not price at the per-kg rate. A "
    "deactivated piece is refused (409 `inactive`) unless the set already holds it"
)


class Component(StrictInput):
    item_type_id: int = Field(ge=1, le=ID_MAX)
    qty: int = Field(ge=1, le=100)


class ComponentOut(Schema):
    item_type_id: int
    qty: int


class ItemTypeCreate(StrictInput):
    code: str = Field(pattern=CODE_PATTERN, description="Unique per tenant, e.g. TOWEL_BATH")
    name: str = Field(min_length=1, max_length=200)
    category: Category
    size: str | None = Field(default=None, max_length=64)
    unit: Unit = "piece"
    weight_grams: int = Field(default=0, ge=0, le=100_000, description=WEIGHT)
    active: bool = True
    components: list[Component] = Field(default_factory=list, max_length=50, description=COMPONENTS)


class ItemTypeUpdate(StrictInput):
    """Fields left out are unchanged."""

    code: str | None = Field(default=None, pattern=CODE_PATTERN)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    category: Category | None = None
    size: str | None = Field(default=None, max_length=64)
    unit: Unit | None = None
    weight_grams: int | None = Field(default=None, ge=0, le=100_000, description=WEIGHT)
    active: bool | None = None
    components: list[Component] | None = Field(default=None, max_length=50, description=COMPONENTS)


class ItemTypeOut(Schema):
    id: int
    code: str
    name: str
    category: str
    size: str | None
    unit: str
    weight_grams: int
    active: bool
    components: list[ComponentOut]
    created_at: str
    updated_at: str


# A client may send back what it read, edited: the answer's other fields are ignored there.
echoes(ItemTypeUpdate, ItemTypeOut)
