"""Wire shapes of the routing tables: camelCase reads, PascalCase inbound write echoes."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from switchboard.kit.schemas import Page, PascalSchema, Schema, StrictInput, echoes

PATTERN_MAX = 128
TRUNKS_MAX = 16

Pattern = Annotated[
    str,
    Field(
        min_length=1,
        max_length=PATTERN_MAX,
        pattern=r"^[^\s\x00-\x1f\x7f]+$",
        description="A literal, or a literal followed by a trailing `*` wildcard",
    ),
]
OptionalPattern = Annotated[
    str | None,
    Field(
        max_length=PATTERN_MAX,
        pattern=r"^[^\s\x00-\x1f\x7f]*$",
        description="Empty or absent: any caller",
    ),
]


def _not_blank(user: str) -> str:
    """Spaces inside a name, not a name of spaces alone: it would ring nobody's phone."""
    if not user.strip():
        raise ValueError("must not be blank")
    return user


UserName = Annotated[
    str,
    Field(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$"),
    AfterValidator(_not_blank),
]
TrunkId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\s\x00-\x1f\x7f]+$")]


def _once_each(trunk_ids: list[str]) -> list[str]:
    """A trunk listed twice would be tried twice for one call: refused, not deduplicated."""
    seen: set[str] = set()
    for trunk_id in trunk_ids:
        if trunk_id in seen:
            raise ValueError(f"{trunk_id!r} is listed twice")
        seen.add(trunk_id)
    return trunk_ids


TrunkIds = Annotated[
    list[TrunkId],
    Field(
        min_length=1,
        max_length=TRUNKS_MAX,
        description="Tried in order by the bridge; each trunk once",
        json_schema_extra={"uniqueItems": True},
    ),
    AfterValidator(_once_each),
]


# Inbound -------------------------------------------------------------------------------------


class InboundRouteCreate(StrictInput):
    did: Pattern = Field(description="Dialled number, extension, `anonymous`, `*` or a pattern")
    from_number: OptionalPattern = None
    user: UserName = Field(description="Office-tab user whose phone rings")


class InboundRouteUpdate(StrictInput):
    user: UserName
    did: str | None = Field(
        default=None, description="Must equal the path's `{did}` if sent (it cannot change)"
    )
    from_number: str | None = Field(
        default=None,
        description="Must equal the `fromNumber` query (empty when absent) if sent (it cannot "
        "change)",
    )


class InboundRouteItem(Schema):
    """A row as the list and GET-one show it (camelCase)."""

    did: str
    from_number: str = Field(description="Empty when the row does not filter the caller")
    user: str


class InboundRouteEcho(PascalSchema):
    """A row as POST, PUT and DELETE echo it (PascalCase)."""

    did: str
    from_number: str
    user: str


class InboundRouteDeleted(Schema):
    deleted: InboundRouteEcho


class InboundResolution(Schema):
    """Which row a call would ring, and why."""

    did: str
    from_number: str = Field(description="The calling party as matched; `anonymous` if none")
    normalised_did: str = Field(description="The dialled number with `00` written as `+`")
    matched: bool
    index: int | None = Field(description="0-based position of the row in evaluation order")
    route: InboundRouteItem | None
    user: str
    reason: str


# Outbound ------------------------------------------------------------------------------------


class OutboundRouteCreate(StrictInput):
    match: Pattern = Field(description="Dial prefix with a trailing `*`, a number, or `global`")
    trunk_ids: TrunkIds


class OutboundRouteUpdate(StrictInput):
    trunk_ids: TrunkIds
    match: str | None = Field(
        default=None, description="Must equal the path's `{match}` if sent (it cannot change)"
    )


class OutboundRouteItem(Schema):
    match: str
    trunk_ids: list[str]


class OutboundRouteDeleted(Schema):
    deleted: OutboundRouteItem


class OutboundRoutePage(Page[OutboundRouteItem]):
    default_trunk_id: str = Field(description="Used when no row matches; a tenant setting")


class OutboundResolution(Schema):
    """Which row a dialled number would use, and why."""

    number: str
    normalised_number: str
    matched: bool
    index: int | None = Field(description="0-based position of the row in evaluation order")
    route: OutboundRouteItem | None
    trunk_ids: list[str]
    default_trunk_id: str
    used_default: bool
    reason: str


# A client may send back what it read, edited: the answer's other fields are ignored there.
echoes(InboundRouteUpdate, InboundRouteEcho)
echoes(OutboundRouteUpdate, OutboundRouteItem)
