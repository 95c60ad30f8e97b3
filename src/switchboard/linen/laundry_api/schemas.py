from __future__ import annotations

import datetime as dt

from switchboard.kit.schemas import Schema
from switchboard.linen.laundries.schemas import AddressOut
from switchboard.linen.sheets.schemas import LineOut, SheetStatus


class JobProperty(Schema):
    id: int
    code: str
    name: str
    address: AddressOut
    timezone: str
    delivery_note: str


class JobItemType(Schema):
    id: int
    code: str
    name: str
    unit: str
    weight_grams: int


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
