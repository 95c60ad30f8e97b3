from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from pydantic import Field

from switchboard.kit.schemas import Schema
from switchboard.linen.item_types import service as item_types
from switchboard.linen.item_types.models import ItemType
from switchboard.linen.laundries.schemas import AddressOut
from switchboard.linen.sheets.schemas import LineOut, SheetStatus


class JobProperty(Schema):
    id: int
    code: str
    name: str
    address: AddressOut
    timezone: str
    delivery_note: str


class JobComponent(Schema):
    """One piece a set is made of, ``qty`` of it in one set."""

    item_type_id: int
    code: str
    name: str
    qty: int


class JobItemType(Schema):
    id: int
    code: str
    name: str
    unit: str
    weight_grams: int = Field(
        description="Grams of one unit as the job's weightKg counts it: the item type's own "
        "weight, or for a set without one, what its components weigh"
    )
    components: list[JobComponent] = Field(
        description="What one set is made of (empty for a piece): the laundry packs these"
    )


def job_item_type(kind: ItemType, kinds: Mapping[int, ItemType]) -> JobItemType:
    """``kind`` as a job shows it; ``kinds`` holds the components of the sets."""
    return JobItemType(
        id=kind.id,
        code=kind.code,
        name=kind.name,
        unit=kind.unit,
        weight_grams=item_types.unit_weight(kind, kinds),
        components=[
            JobComponent(item_type_id=i, code=kinds[i].code, name=kinds[i].name, qty=qty)
            for i, qty in item_types.components_of(kind)
            if i in kinds
        ],
    )


class JobOut(Schema):
    """A confirmed linen sheet as the laundry sees it (no internal notes or users)."""

    id: int
    number: str
    status: SheetStatus
    service_date: dt.date
    pickup_date: dt.date | None
    reason: str
    guest_count: int | None
    late_order: bool
    property: JobProperty
    lines: list[LineOut]
    item_types: list[JobItemType]
    confirmed_at: str | None
    delivered_at: str | None
    cancelled_at: str | None
    invoice_id: int | None
    weight_kg: float
    updated_at: str


class LaundryMe(Schema):
    id: int
    name: str
