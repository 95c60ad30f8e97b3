"""Mechanics shared by the linen features: money, sorting, date ranges and paged queries."""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

import pycountry
from fastapi import Path, Query
from pydantic import AfterValidator, BeforeValidator, Field
from sqlalchemy import ColumnElement, Select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.errors import BadRequest, Conflict
from switchboard.kit.paging import PageParams
from switchboard.kit.paging import fetch_page as kit_fetch_page
from switchboard.kit.schemas import ErrorBody, Page, Schema

T = TypeVar("T")

ID_MAX = 2**31 - 1
CURRENCY_PATTERN = r"^[A-Z]{3}$"
# The currency codes of ISO 4217 as pycountry carries them (its list follows the standard's
# maintenance agency).
ISO_4217 = frozenset(currency.alpha_3 for currency in pycountry.currencies)
# The codes ISO 4217 gives to what is not money a laundry prices or invoices in, and what each
# stands for (decision 0522). The X-codes of real money (XAF, XCD, XCG, XOF, XPF) stay.
NOT_MONEY = {
    "XXX": "no currency",
    "XTS": "testing",
    "XAU": "gold",
    "XAG": "silver",
    "XPD": "palladium",
    "XPT": "platinum",
    "XDR": "the IMF's special drawing right",
    "XUA": "the African Development Bank's unit of account",
    "XAD": "the Arab Monetary Fund's accounting dinar",
    "XSU": "the SUCRE unit of account",
    **dict.fromkeys(("XBA", "XBB", "XBC", "XBD"), "a bond-market unit of account"),
}
# What a price list or an invoice may be in; the OpenAPI document lists them.
CURRENCIES = ISO_4217 - NOT_MONEY.keys()


def _currency(code: str) -> str:
    if code in NOT_MONEY:
        raise ValueError(
            f"{code!r} is ISO 4217's code for {NOT_MONEY[code]}, not a currency to price or "
            "invoice in"
        )
    if code not in ISO_4217:
        raise ValueError(f"{code!r} is not an ISO 4217 currency code")
    return code


Currency = Annotated[
    str,
    Field(
        pattern=CURRENCY_PATTERN,
        description="ISO 4217 code of a currency (not XXX, XTS, metals or units of account)",
        json_schema_extra={"enum": sorted(CURRENCIES)},
    ),
    AfterValidator(_currency),
]
MinorUnits = Annotated[int, Field(ge=0, le=10**12, description="Integer minor units (cents)")]


class Money(Schema):
    """An amount in integer minor units (cents) and its ISO 4217 currency."""

    amount: int
    currency: str


Id = Annotated[int, Field(ge=1, le=ID_MAX)]
IdPath = Annotated[int, Path(ge=1, le=ID_MAX)]
IdQuery = Query(ge=1, le=ID_MAX)


@functools.cache
def list_pattern(values: tuple[str, ...], *, signed: bool = False) -> str:
    """A comma-separated list of ``values`` (each with an optional leading ``-`` when
    ``signed``), or the empty string: the pattern the document states and the API enforces."""
    one = ("-?" if signed else "") + "(" + "|".join(re.escape(v) for v in sorted(values)) + ")"
    return rf"^$|^{one}(,{one})*$"


def sort_param(columns: Mapping[str, Any]) -> Any:
    """The ``sort`` query parameter of a list sorted by ``columns`` (their wire names)."""
    return Query(
        description=(
            "Comma-separated sort keys; a leading `-` sorts descending, e.g. `-serviceDate,id`. "
            f"Keys: {', '.join(f'`{key}`' for key in sorted(columns))}."
        ),
        max_length=200,
        # Described, and enforced by ``order_by`` (400 ``invalid_sort``), not by the validator.
        json_schema_extra={"pattern": list_pattern(tuple(columns), signed=True)},
    )


def status_param(statuses: Sequence[str]) -> Any:
    """A ``status`` filter: a comma-separated list of ``statuses``."""
    return Query(
        description=f"Comma-separated: {', '.join(statuses)}",
        max_length=100,
        json_schema_extra={"pattern": list_pattern(tuple(statuses))},
    )


def parse_statuses(value: str | None, allowed: Sequence[str]) -> tuple[str, ...]:
    """The values of a ``status`` filter (empty: no filter); 400 unless each is allowed."""
    if not value:
        return ()
    if not re.fullmatch(list_pattern(tuple(allowed)), value):
        raise BadRequest(f"status: comma-separated values of {', '.join(allowed)}")
    return tuple(value.split(","))


def _calendar_day(value: Any) -> Any:
    """A query day is ``YYYY-MM-DD``; pydantic alone would read ``0`` as a Unix time."""
    if isinstance(value, str) and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise ValueError("must be a date (YYYY-MM-DD)")
    return value


Day = Annotated[dt.date, BeforeValidator(_calendar_day)]

# The dates a user enters (service and pickup dates, validity, invoice dates and periods) lie in
# this century (decision 0520): any real order or invoice does, and a day or a week either side
# of one is still a date, as 0001-01-01 less a day or 9999-12-31 plus one is not.
FIRST_DAY = dt.date(2000, 1, 1)
LAST_DAY = dt.date(2099, 12, 31)
# The same range for the OpenAPI document, which states no bounds on a date but a pattern.
DAY_PATTERN = r"^20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
OUT_OF_RANGE = f"must be a date from {FIRST_DAY} to {LAST_DAY}"


def in_range(day: dt.date) -> dt.date:
    """``day`` if it lies within ``FIRST_DAY..LAST_DAY``; ValueError otherwise."""
    if not FIRST_DAY <= day <= LAST_DAY:
        raise ValueError(OUT_OF_RANGE)
    return day


EnteredDay = Annotated[
    dt.date,
    AfterValidator(in_range),
    Field(
        description=f"A date from {FIRST_DAY} to {LAST_DAY}",
        json_schema_extra={"pattern": DAY_PATTERN},
    ),
]
DateFrom = Annotated[Day | None, Query(alias="from", description="First day included (YYYY-MM-DD)")]
DateTo = Annotated[Day | None, Query(alias="to", description="Last day included (YYYY-MM-DD)")]


def order_by(
    sort: str | None,
    columns: dict[str, ColumnElement[Any] | Any],
    *,
    default: str,
    tiebreak: Any,
) -> list[Any]:
    """ORDER BY clauses for a ``sort`` parameter, restricted to ``columns``; 400 otherwise."""
    if not re.fullmatch(list_pattern(tuple(columns), signed=True), sort or ""):
        allowed = ", ".join(sorted(columns))
        raise BadRequest(
            f"sort: comma-separated keys, each with an optional leading '-', of {allowed}",
            code="invalid_sort",
        )
    clauses: list[Any] = []
    for key in (sort or default).split(","):
        column = columns[key.removeprefix("-")]
        clauses.append(column.desc() if key.startswith("-") else column.asc())
    clauses.append(tiebreak.asc())
    return clauses


def require_active(rows: Sequence[Any], *, hint: str, field: str = "") -> None:
    """409 ``inactive`` naming the first of ``rows`` that is deactivated: new orders go to
    active properties and laundries for active item types, and a property's default laundry
    is an active one. ``hint`` says what the client can do instead."""
    for row in rows:
        if not row.active:
            prefix = f"{field}: " if field else ""
            raise Conflict(f"{prefix}{row.name!r} is deactivated; {hint}", code="inactive")


def check_range(
    start: dt.date | None, end: dt.date | None, names: tuple[str, str] = ("from", "to")
) -> None:
    """400 ``invalid_range`` when ``end`` is before ``start``, naming the end first as every
    description of bad input names its field (decision 0214): ``names`` are the two as sent."""
    if start is not None and end is not None and start > end:
        raise BadRequest(f"{names[1]}: must not be before {names[0]}", code="invalid_range")


async def fetch_page(
    session: AsyncSession, stmt: Select[Any], *, paging: PageParams, order: Sequence[Any]
) -> tuple[list[Any], int]:
    """One window of ``stmt`` (already tenant-scoped and filtered) and the total count."""
    rows, total = await kit_fetch_page(session, stmt.order_by(*order), paging)
    return [row[0] for row in rows], total


async def ids_among(
    session: AsyncSession, stmt: Select[Any], id_column: Any, ids: Iterable[int]
) -> set[int]:
    """Those of ``ids`` that ``stmt`` (a tenant-scoped base statement) finds in ``id_column``:
    the ids alone, for a reference check of up to thousands."""
    wanted = set(ids)
    if not wanted:
        return set()
    return set(
        await session.scalars(stmt.where(id_column.in_(wanted)).with_only_columns(id_column))
    )


def page(items: list[T], total: int, paging: PageParams) -> Page[T]:
    return Page(data=items, **paging.envelope(total))


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    described = {
        400: "Bad input (the body names the field)",
        401: "Missing or invalid credentials",
        403: "The caller's role may not do this",
        404: "No such resource for this tenant",
        409: "The resource's state or a duplicate forbids the change",
        413: "The upload is larger than the limit",
        415: "The upload is not of the accepted type",
    }
    return {code: {"model": ErrorBody, "description": described[code]} for code in codes}


READ_ERRORS = error_responses(400, 401, 404)
WRITE_ERRORS = error_responses(400, 401, 403, 404, 409)


def few(names: Sequence[str]) -> str:
    """The first three of ``names``, and ``...`` when there are more: what a refusal names."""
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def refuse_while_used(
    what: str, users: Sequence[str], *, hint: str = "deactivate it instead"
) -> None:
    """409 ``in_use`` naming ``users``, what still refers to the ``what`` (``item type``),
    and ending with ``hint``, what the client can do instead; nothing when ``users`` is empty."""
    if users:
        raise Conflict(f"the {what} is still used by {few(users)}; {hint}", code="in_use")


async def delete_unless_used(
    session: AsyncSession, row: object, *, what: str, hint: str = "deactivate it instead"
) -> None:
    """Delete ``row``; a foreign key still pointing at it makes this a 409 ``in_use`` whose
    description ends with ``hint``, what the client can do instead."""
    from sqlalchemy.exc import IntegrityError

    await session.delete(row)
    try:
        await session.flush()
    except IntegrityError:
        raise Conflict(f"the {what} is still referenced; {hint}", code="in_use") from None
