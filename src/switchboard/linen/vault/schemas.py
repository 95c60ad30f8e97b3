from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from switchboard.kit.schemas import Schema, StrictInput, echoes
from switchboard.linen.common import ID_MAX, EnteredDay

VaultKind = Literal["key-safe", "door-code", "alarm", "wifi", "document", "other"]
MASK = "••••••"
SECRET_MAX_BYTES = 4000


def _fits(secret: str) -> str:
    # The sealed secret must fit its column on every backend: bytes, not characters, count.
    if len(secret.encode()) > SECRET_MAX_BYTES:
        raise ValueError(f"at most {SECRET_MAX_BYTES} bytes in UTF-8")
    return secret


Secret = Annotated[
    str,
    Field(
        min_length=1,
        max_length=SECRET_MAX_BYTES,
        description=f"At most {SECRET_MAX_BYTES} characters and {SECRET_MAX_BYTES} bytes in UTF-8",
    ),
    AfterValidator(_fits),
]


class VaultCreate(StrictInput):
    """Exactly one of ``propertyId`` and ``groupId``."""

    property_id: int | None = Field(default=None, ge=1, le=ID_MAX)
    group_id: int | None = Field(default=None, ge=1, le=ID_MAX)
    kind: VaultKind
    label: str = Field(min_length=1, max_length=200)
    secret: Secret
    valid_from: EnteredDay | None = None
    valid_to: EnteredDay | None = None
    notes: str = Field(default="", max_length=2000)


class VaultUpdate(StrictInput):
    """Fields left out are unchanged; a new ``secret`` sets ``rotatedAt``."""

    kind: VaultKind | None = None
    label: str | None = Field(default=None, min_length=1, max_length=200)
    secret: Secret | None = None
    valid_from: EnteredDay | None = None
    valid_to: EnteredDay | None = None
    notes: str | None = Field(default=None, max_length=2000)


class VaultOut(Schema):
    id: int
    property_id: int | None
    group_id: int | None
    kind: str
    label: str
    secret: str = Field(description=f"Always masked as {MASK!r}; use the reveal action")
    valid_from: dt.date | None
    valid_to: dt.date | None
    notes: str
    rotated_at: str | None
    created_at: str
    updated_at: str
    updated_by: str


class RevealOut(Schema):
    id: int
    secret: str
    revealed_at: str
    revealed_by: str


class RevealLogItem(Schema):
    entry_id: int
    entry_label: str = Field(description="The entry's label when it was revealed")
    username: str
    role: str
    revealed_at: str


# A client may send back what it read, edited: the answer's other fields are ignored there.
echoes(VaultUpdate, VaultOut)
