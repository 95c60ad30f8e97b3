from __future__ import annotations

import datetime as dt

from pydantic import Field

from switchboard.kit.schemas import Schema, StrictInput, echoes
from switchboard.linen.common import ID_MAX, Currency, EnteredDay, MinorUnits

# One "@" between two runs of neither spaces nor control characters. The control ranges are
# spelled out: regex engines disagree on what ``\s`` holds (U+0085 and U+001C-U+001F are
# whitespace to Python and pydantic's Rust engine, not to the ECMA-262 pattern of the OpenAPI
# document), and no address contains one.
EMAIL = r"^([^@\s\x00-\x1f\x7f-\x9f]+@[^@\s\x00-\x1f\x7f-\x9f]+)?$"


class Address(StrictInput):
    street: str = Field(default="", max_length=200)
    postal_code: str = Field(default="", max_length=32)
    city: str = Field(default="", max_length=120)
    country_code: str = Field(default="", pattern=r"^([A-Z]{2})?$", description="ISO 3166-1")


class AddressOut(Schema):
    street: str = ""
    postal_code: str = ""
    city: str = ""
    country_code: str = ""


class LaundryCreate(StrictInput):
    name: str = Field(min_length=1, max_length=200)
    contact_name: str = Field(default="", max_length=200)
    email: str = Field(default="", max_length=320, pattern=EMAIL)
    phone: str = Field(default="", max_length=64)
    address: Address = Field(default_factory=Address)
    vat_id: str = Field(default="", max_length=64)
    active: bool = True


class LaundryUpdate(StrictInput):
    """Fields left out are unchanged."""

    name: str | None = Field(default=None, min_length=1, max_length=200)
    contact_name: str | None = Field(default=None, max_length=200)
    email: str | None = Field(default=None, max_length=320, pattern=EMAIL)
    phone: str | None = Field(default=None, max_length=64)
    address: Address | None = None
    vat_id: str | None = Field(default=None, max_length=64)
    active: bool | None = None


class LaundryOut(Schema):
    id: int
    name: str
    contact_name: str
    email: str
    phone: str
    address: AddressOut
    vat_id: str
    active: bool
    created_at: str
    updated_at: str


class KeyCreate(StrictInput):
    name: str = Field(default="", max_length=128, description="Operator label")


class KeyOut(Schema):
    id: int
    laundry_id: int
    name: str
    prefix: str = Field(description="First characters of the key, to recognise it")
    created_at: str
    created_by: str
    last_used_at: str | None
    revoked_at: str | None


class KeyCreated(KeyOut):
    key: str = Field(description="The laundry key (`lk_...`). Shown once; only a hash is kept.")


class PriceItem(StrictInput):
    item_type_id: int = Field(ge=1, le=ID_MAX)
    unit_price: MinorUnits
    lost_item_price: MinorUnits | None = None


class PriceItemOut(Schema):
    item_type_id: int
    unit_price: int
    lost_item_price: int | None = None


class PriceListIn(StrictInput):
    """A whole price list; PUT replaces every field."""

    name: str = Field(default="", max_length=200)
    currency: Currency
    valid_from: EnteredDay
    valid_to: EnteredDay | None = None
    per_kg: MinorUnits | None = Field(default=None, description="Price per kg for unlisted items")
    delivery_fee: MinorUnits = 0
    late_order_surcharge: MinorUnits = 0
    items: list[PriceItem] = Field(default_factory=list, max_length=1000)


class PriceListOut(Schema):
    id: int
    laundry_id: int
    name: str
    currency: str
    valid_from: dt.date
    valid_to: dt.date | None
    per_kg: int | None
    delivery_fee: int
    late_order_surcharge: int
    items: list[PriceItemOut]
    created_at: str
    updated_at: str


# A client may send back what it read, edited: the answer's other fields are ignored there.
echoes(LaundryUpdate, LaundryOut)
echoes(PriceListIn, PriceListOut)
