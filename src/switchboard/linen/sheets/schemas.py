from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from switchboard.kit.schemas import Schema, StrictInput, echoes
from switchboard.linen.common import ID_MAX, EnteredDay, Money

SheetStatus = Literal["draft", "confirmed", "delivered", "invoiced", "cancelled"]
Reason = Literal["turnover", "restock", "full-change", "ad-hoc"]
Qty = Field(default=0, ge=0, le=10_000)


class LineIn(StrictInput):
    item_type_id: int = Field(ge=1, le=ID_MAX)
    qty_ordered: int = Field(ge=0, le=10_000)
    note: str = Field(default="", max_length=500)


ORDERABLE = (
    "A deactivated item type, or a set with a deactivated component, is refused (409 `inactive`)"
)


class SheetCreate(StrictInput):
    property_id: int = Field(ge=1, le=ID_MAX)
    laundry_id: int | None = Field(
        default=None,
        ge=1,
        le=ID_MAX,
        description="Defaults to the property's default laundry; either way it must be active "
        "(409 `inactive`)",
    )
    service_date: EnteredDay
    pickup_date: EnteredDay | None = None
    reason: Reason = "turnover"
    booking_ref: str = Field(default="", max_length=128)
    guest_count: int | None = Field(default=None, ge=0, le=1000)
    lines: list[LineIn] = Field(
        default_factory=list,
        max_length=200,
        description="Left out: one line per par level of the property (`linenPar`) above 0, "
        "a deactivated one refused as a line naming it is. " + ORDERABLE,
    )
    notes: str = Field(default="", max_length=5000)


class SheetUpdate(StrictInput):
    """Drafts only. Fields left out are unchanged; ``lines`` replaces every line."""

    laundry_id: int | None = Field(default=None, ge=1, le=ID_MAX)
    service_date: EnteredDay | None = None
    pickup_date: EnteredDay | None = None
    reason: Reason | None = None
    booking_ref: str | None = Field(default=None, max_length=128)
    guest_count: int | None = Field(default=None, ge=0, le=1000)
    lines: list[LineIn] | None = Field(default=None, max_length=200, description=ORDERABLE)
    notes: str | None = Field(default=None, max_length=5000)


class CancelIn(StrictInput):
    reason: str = Field(default="", max_length=500)


class DeliveryLineIn(StrictInput):
    item_type_id: int = Field(ge=1, le=ID_MAX)
    qty_delivered: int = Qty
    qty_collected: int = Qty
    qty_rejected: int = Field(default=0, ge=0, le=10_000, description="Delivered but refused")
    note: str | None = Field(default=None, max_length=500)


class DeliveryReport(StrictInput):
    """Counts per item type; item types not named keep their counts."""

    delivered_at: dt.datetime | None = Field(
        default=None,
        description=(
            "Defaults to now (UTC); not in the future, with up to 5 minutes ahead of the "
            "portal's clock accepted (clock skew) and stored as given. Without an offset: UTC"
        ),
    )
    lines: list[DeliveryLineIn] = Field(min_length=1, max_length=200)


class LineOut(Schema):
    item_type_id: int
    qty_ordered: int
    qty_delivered: int
    qty_collected: int
    qty_rejected: int
    balance_due: int = Field(description="Ordered minus accepted (delivered - rejected), >= 0")
    note: str


class BalanceItem(Schema):
    item_type_id: int
    code: str
    ordered: int
    accepted: int = Field(description="Delivered minus rejected")
    balance: int = Field(description="ordered - accepted: still owed; negative = ahead")


class PropertyBalance(Schema):
    property_id: int
    until: dt.date | None
    items: list[BalanceItem]


class SheetOut(Schema):
    id: int
    number: str
    property_id: int
    laundry_id: int
    service_date: dt.date
    pickup_date: dt.date | None
    reason: str
    booking_ref: str
    guest_count: int | None
    status: SheetStatus
    late_order: bool
    lines: list[LineOut]
    confirmed_at: str | None
    confirmed_by: str | None
    delivered_at: str | None
    reported_by: str | None = Field(description="Who reported the counts: a user or laundry:<id>")
    cancelled_at: str | None
    cancelled_by: str | None
    cancel_reason: str
    invoice_id: int | None
    weight_kg: float = Field(
        description="The counts (accepted once delivered, ordered before) times the item "
        "types' `weightGrams`; a set of no weight of its own weighs what its components do"
    )
    estimated_cost: Money | None = Field(
        description="From the laundry's price list in force on the service date (null without "
        "one): unit prices, else weight at the per-kg rate; a set the list does not price costs "
        "its components' unit prices, and whatever of its weight they do not price at the per-kg "
        "rate; plus the delivery fee and any late-order surcharge"
    )
    notes: str
    created_at: str
    created_by: str
    updated_at: str


def sheet_out(sheet: object, lines: list[object]) -> SheetOut:
    """The wire form of a sheet and its lines (plain conversion, no queries)."""
    from switchboard.kit.clock import iso_utc
    from switchboard.linen.sheets.models import LinenSheet, SheetLine

    assert isinstance(sheet, LinenSheet)
    out_lines = []
    for line in lines:
        assert isinstance(line, SheetLine)
        out_lines.append(
            LineOut(
                item_type_id=line.item_type_id,
                qty_ordered=line.qty_ordered,
                qty_delivered=line.qty_delivered,
                qty_collected=line.qty_collected,
                qty_rejected=line.qty_rejected,
                balance_due=max(0, line.qty_ordered - (line.qty_delivered - line.qty_rejected)),
                note=line.note,
            )
        )
    cost = None
    if sheet.estimated_cost is not None and sheet.currency is not None:
        cost = Money(amount=sheet.estimated_cost, currency=sheet.currency)
    return SheetOut(
        id=sheet.id,
        number=sheet.number,
        property_id=sheet.property_id,
        laundry_id=sheet.laundry_id,
        service_date=sheet.service_date,
        pickup_date=sheet.pickup_date,
        reason=sheet.reason,
        booking_ref=sheet.booking_ref,
        guest_count=sheet.guest_count,
        status=sheet.status,
        late_order=sheet.late_order,
        lines=out_lines,
        confirmed_at=iso_utc(sheet.confirmed_at),
        confirmed_by=sheet.confirmed_by,
        delivered_at=iso_utc(sheet.delivered_at),
        reported_by=sheet.reported_by,
        cancelled_at=iso_utc(sheet.cancelled_at),
        cancelled_by=sheet.cancelled_by,
        cancel_reason=sheet.cancel_reason,
        invoice_id=sheet.invoice_id,
        weight_kg=sheet.weight_grams / 1000,
        estimated_cost=cost,
        notes=sheet.notes,
        created_at=iso_utc(sheet.created_at) or "",
        created_by=sheet.created_by,
        updated_at=iso_utc(sheet.updated_at) or "",
    )


# A client may send back what it read, edited: the answer's other fields are ignored there.
echoes(SheetUpdate, SheetOut)
