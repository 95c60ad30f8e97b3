"""Reads several pages share: every list at once (paging is the Data API's concern), names of
item types, properties and laundries, and a sheet's lines with their item types."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import PageParams
from switchboard.linen.groups import service as groups
from switchboard.linen.groups.models import PropertyGroup
from switchboard.linen.item_types import service as item_types
from switchboard.linen.item_types.models import ItemType
from switchboard.linen.laundries import service as laundries
from switchboard.linen.laundries.models import Laundry
from switchboard.linen.properties import service as properties
from switchboard.linen.properties.models import Property
from switchboard.linen.sheets import service as sheets
from switchboard.linen.sheets.models import LinenSheet, SheetLine
from switchboard.linen.sheets.repository import SheetFilter

ALL = PageParams(limit=1000, offset=0, path="", query=())


@dataclass(frozen=True, slots=True)
class Names:
    """The properties, laundries and item types a page mentions, by id."""

    properties: dict[int, Property]
    laundries: dict[int, Laundry]
    kinds: dict[int, ItemType]


async def names_for(session: AsyncSession, tenant_id: int, rows: list[LinenSheet]) -> Names:
    lines = await sheets.lines_of(session, tenant_id=tenant_id, sheet_ids=[r.id for r in rows])
    kind_ids = {line.item_type_id for group in lines.values() for line in group}
    return Names(
        properties=await properties.many(
            session, tenant_id=tenant_id, ids=list({r.property_id for r in rows})
        ),
        laundries=await laundries.many(
            session, tenant_id=tenant_id, ids=list({r.laundry_id for r in rows})
        ),
        kinds=await item_types.many(session, tenant_id=tenant_id, ids=list(kind_ids)),
    )


async def all_item_types(session: AsyncSession, tenant_id: int) -> list[ItemType]:
    rows, _ = await item_types.list_item_types(
        session, tenant_id=tenant_id, category=None, active=None, paging=ALL, sort="code"
    )
    return rows


async def all_properties(session: AsyncSession, tenant_id: int) -> list[Property]:
    rows, _ = await properties.list_properties(
        session, tenant_id=tenant_id, active=None, group_id=None, laundry_id=None, q=None,
        paging=ALL, sort="code",
    )  # fmt: skip
    return rows


async def all_groups(session: AsyncSession, tenant_id: int) -> list[PropertyGroup]:
    rows, _ = await groups.list_groups(
        session, tenant_id=tenant_id, kind=None, property_id=None, paging=ALL, sort="name"
    )
    return rows


async def all_laundries(session: AsyncSession, tenant_id: int) -> list[Laundry]:
    rows, _ = await laundries.list_laundries(
        session, tenant_id=tenant_id, active=None, paging=ALL, sort="name"
    )
    return rows


def laundry_choices(rows: list[Laundry], current: int | None) -> list[Laundry]:
    """The laundries a form offers: the active ones, and ``current`` (the one the object
    already names) even when it was deactivated since, so that saving does not change it."""
    return [row for row in rows if row.active or row.id == current]


async def sheets_where(
    session: AsyncSession, tenant_id: int, where: SheetFilter, sort: str = "serviceDate,id"
) -> list[LinenSheet]:
    rows, _ = await sheets.list_sheets(
        session, tenant_id=tenant_id, where=where, paging=ALL, sort=sort
    )
    return rows


def expand_sets(lines: list[SheetLine], kinds: dict[int, ItemType]) -> dict[int, int]:
    """Quantities per item type with every set replaced by its components."""
    out: dict[int, int] = defaultdict(int)
    for line in lines:
        kind = kinds.get(line.item_type_id)
        for part, qty in item_types.parts(kind) if kind is not None else [(line.item_type_id, 1)]:
            out[part] += qty * line.qty_ordered
    return dict(out)
