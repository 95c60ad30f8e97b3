from __future__ import annotations

import zoneinfo
from typing import Literal

from pydantic import Field, field_validator
from pydantic.config import JsonDict

from switchboard.kit.schemas import Schema, StrictInput, echoes
from switchboard.linen.common import ID_MAX, Id
from switchboard.linen.laundries.schemas import Address, AddressOut

BedType = Literal["single", "double", "queen", "king", "sofa"]
CODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


# The IANA zones of this machine's time zone database: the document lists them, and a value
# outside the list is refused (ZoneInfo alone would also take aliases such as "posix/...").
ZONES = sorted(zoneinfo.available_timezones())
_ZONE_SET = frozenset(ZONES)
ZONE_SCHEMA: JsonDict = {"enum": list(ZONES)}


def _check_zone(value: str | None) -> str | None:
    if value is not None and value not in _ZONE_SET:
        raise ValueError(f"unknown IANA time zone {value!r}")
    return value


class Bed(StrictInput):
    bed_type: BedType
    count: int = Field(ge=1, le=50)


class BedOut(Schema):
    bed_type: str
    count: int


class ParLine(StrictInput):
    item_type_id: int = Field(ge=1, le=ID_MAX)
    qty: int = Field(ge=0, le=10_000)


class ParLineOut(Schema):
    item_type_id: int
    qty: int


PAR = (
    "What a sheet left without lines orders, one line per item type above 0; a deactivated "
    "item type is refused (409 `inactive`)"
)


class PropertyCreate(StrictInput):
    code: str = Field(pattern=CODE_PATTERN, description="Human reference, unique per tenant")
    name: str = Field(min_length=1, max_length=200)
    external_ref: str = Field(default="", max_length=128, description="Id in the PMS")
    active: bool = True
    address: Address = Field(default_factory=Address)
    timezone: str = Field(
        default="UTC", max_length=64, description="IANA time zone", json_schema_extra=ZONE_SCHEMA
    )
    bedrooms: int = Field(default=0, ge=0, le=100)
    bathrooms: int = Field(default=0, ge=0, le=100)
    max_guests: int = Field(default=0, ge=0, le=1000)
    beds: list[Bed] = Field(default_factory=list, max_length=100)
    default_laundry_id: int | None = Field(
        default=None,
        ge=1,
        le=ID_MAX,
        description="New sheets go to it unless they name another; a deactivated laundry is "
        "refused (409 `inactive`)",
    )
    linen_par: list[ParLine] = Field(default_factory=list, max_length=500, description=PAR)
    delivery_note: str = Field(default="", max_length=2000, description="Where linen is left")
    group_ids: list[Id] = Field(default_factory=list, max_length=100)
    notes: str = Field(default="", max_length=5000)

    _zone = field_validator("timezone")(_check_zone)


class PropertyUpdate(StrictInput):
    """Fields left out are unchanged; lists replace the whole list."""

    code: str | None = Field(default=None, pattern=CODE_PATTERN)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    external_ref: str | None = Field(default=None, max_length=128)
    active: bool | None = None
    address: Address | None = None
    timezone: str | None = Field(
        default=None, max_length=64, description="IANA time zone", json_schema_extra=ZONE_SCHEMA
    )
    bedrooms: int | None = Field(default=None, ge=0, le=100)
    bathrooms: int | None = Field(default=None, ge=0, le=100)
    max_guests: int | None = Field(default=None, ge=0, le=1000)
    beds: list[Bed] | None = Field(default=None, max_length=100)
    default_laundry_id: int | None = Field(
        default=None,
        ge=1,
        le=ID_MAX,
        description="null clears it; a deactivated laundry is refused (409 `inactive`) unless "
        "it is already the property's",
    )
    linen_par: list[ParLine] | None = Field(
        default=None, max_length=500, description=PAR + " unless the property already lists it"
    )
    delivery_note: str | None = Field(default=None, max_length=2000)
    group_ids: list[Id] | None = Field(default=None, max_length=100)
    notes: str | None = Field(default=None, max_length=5000)

    _zone = field_validator("timezone")(_check_zone)


class PropertyOut(Schema):
    id: int
    code: str
    name: str
    external_ref: str
    active: bool
    address: AddressOut
    timezone: str
    bedrooms: int
    bathrooms: int
    max_guests: int
    beds: list[BedOut]
    default_laundry_id: int | None
    linen_par: list[ParLineOut]
    delivery_note: str
    group_ids: list[int]
    notes: str
    created_at: str
    updated_at: str


# A client may send back what it read, edited: the answer's other fields are ignored there.
echoes(PropertyUpdate, PropertyOut)
