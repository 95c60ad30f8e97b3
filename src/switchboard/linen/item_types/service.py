"""Item-type rules: unique codes, sets made of pieces, deletion only while unused."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.kit.paging import PageParams
from switchboard.linen import figures
from switchboard.linen.common import delete_unless_used, refuse_while_used, require_active
from switchboard.linen.hooks import Uses
from switchboard.linen.item_types import repository
from switchboard.linen.item_types.models import ItemType
from switchboard.linen.item_types.schemas import Component, ItemTypeCreate, ItemTypeUpdate

# What may still use an item type besides the sets made with it: the par levels of properties,
# the price lists of laundries and the lines of sheets, each feature built on item types and
# registered by its service, in the order a refused delete names them.
USED_BY = Uses("an item type", "properties", "laundries", "sheets")


async def get(
    session: AsyncSession, *, tenant_id: int, item_type_id: int, lock: bool = False
) -> ItemType:
    row = await repository.get(session, tenant_id, item_type_id, lock=lock)
    if row is None:
        raise NotFound(f"no item type {item_type_id}")
    return row


async def many(session: AsyncSession, *, tenant_id: int, ids: list[int]) -> dict[int, ItemType]:
    return await repository.many(session, tenant_id, ids)


async def with_components(
    session: AsyncSession, *, tenant_id: int, ids: Iterable[int]
) -> dict[int, ItemType]:
    """The item types of ``ids`` and the components of the sets among them (sets hold pieces
    only, so one more query at most)."""
    found = await repository.many(session, tenant_id, ids)
    parts = {i for kind in found.values() for i, _ in components_of(kind)} - set(found)
    if parts:
        found.update(await repository.many(session, tenant_id, parts))
    return found


def components_of(kind: ItemType) -> list[tuple[int, int]]:
    """A set's components as (item type id, qty); nothing for a piece."""
    if kind.unit != "set":
        return []
    return [(int(c["itemTypeId"]), int(c["qty"])) for c in kind.components]


def parts(kind: ItemType) -> list[tuple[int, int]]:
    """What one unit of ``kind`` is made of, as (item type id, qty): a set's components, or
    the item itself once (a piece, or a set that lists no components)."""
    return components_of(kind) or [(kind.id, 1)]


def unit_weight(kind: ItemType, kinds: Mapping[int, ItemType]) -> int:
    """Grams of one unit: the item type's own ``weightGrams`` when above 0; a set without one
    weighs what its components do (``kinds`` holds them; one missing weighs nothing)."""
    if kind.weight_grams > 0:
        return kind.weight_grams
    return sum(kinds[i].weight_grams * qty for i, qty in components_of(kind) if i in kinds)


async def require_all(
    session: AsyncSession, *, tenant_id: int, ids: list[int], field: str, referenced: bool = False
) -> dict[int, ItemType]:
    """The item types named in a body; an unknown id is a 400 naming the field.

    ``referenced``: the caller stores the ids in a JSON column (par levels, price lists, set
    components), which no foreign key guards; the rows are then held until the transaction
    ends, so a concurrent delete cannot miss the new reference."""
    found = await repository.many(session, tenant_id, ids, share=referenced)
    missing = sorted(set(ids) - set(found))
    if missing:
        raise BadRequest(f"{field}: unknown item type {missing[0]}", code="unknown_reference")
    return found


async def require_chosen(
    session: AsyncSession,
    *,
    tenant_id: int,
    ids: list[int],
    field: str,
    hint: str,
    kept: Collection[int] = (),
    vet: Callable[[ItemType], None] | None = None,
) -> dict[int, ItemType]:
    """The item types a list of a set's components or a property's par levels names: each
    once, the tenant's (400, held as ``referenced`` in :func:`require_all`), passed by ``vet``
    (its own 400s), and active (409 ``inactive``, ``hint``: what the client can do) unless
    ``kept``, already on the list when deactivated (decisions 0523, 0524)."""
    if len(set(ids)) != len(ids):
        raise BadRequest(f"{field}: an item type is listed twice")
    found = await require_all(session, tenant_id=tenant_id, ids=ids, field=field, referenced=True)
    if vet is not None:
        for kind in found.values():
            vet(kind)
    require_active([found[i] for i in ids if i not in kept], hint=hint, field=field)
    return found


async def require_orderable(
    session: AsyncSession, *, tenant_id: int, kinds: Mapping[int, ItemType], hint: str
) -> None:
    """409 ``inactive`` when one of ``kinds``, the item types of an order's lines, is
    deactivated (``hint``: what the client can do), or a component of a set among them is:
    ordering a set orders its pieces, and a retired piece takes no new order (decision 0523)."""
    require_active(list(kinds.values()), hint=hint, field="lines")
    wanted = {part for kind in kinds.values() for part, _ in components_of(kind)}
    pieces = await repository.many(session, tenant_id, wanted)
    for kind in kinds.values():
        for part, _ in components_of(kind):
            if part in pieces and not pieces[part].active:
                raise Conflict(
                    f"lines: {pieces[part].name!r}, a component of set {kind.name!r}, is "
                    "deactivated; reactivate it, or take it out of the set",
                    code="inactive",
                )


async def list_item_types(
    session: AsyncSession,
    *,
    tenant_id: int,
    category: str | None,
    active: bool | None,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[ItemType], int]:
    return await repository.list_page(
        session, tenant_id, category=category, active=active, paging=paging, sort=sort
    )


async def _check_components(
    session: AsyncSession,
    *,
    tenant_id: int,
    unit: str,
    components: list[Component],
    own_id: int,
    kept: Collection[int] = (),
) -> list[dict[str, Any]]:
    """A set's components: pieces of the tenant, each once, and active (409 ``inactive``)
    unless ``kept``, already in the set when it was deactivated (decision 0523)."""
    if unit != "set":
        if components:
            raise BadRequest("components: only an item of unit `set` has components")
        return []

    def piece(component: ItemType) -> None:
        if component.unit == "set" or component.id == own_id:
            raise BadRequest("components: a set is made of pieces, not of sets")

    await require_chosen(
        session, tenant_id=tenant_id, ids=[c.item_type_id for c in components],
        field="components", hint="reactivate it, or leave it out of the set", kept=kept,
        vet=piece,
    )  # fmt: skip
    return [{"itemTypeId": c.item_type_id, "qty": c.qty} for c in components]


async def _check_code(session: AsyncSession, tenant_id: int, code: str, own_id: int) -> None:
    other = await repository.by_code(session, tenant_id, code)
    if other is not None and other.id != own_id:
        raise Conflict(f"item type code {code!r} already exists", code="duplicate_code")


async def create(
    session: AsyncSession, *, tenant_id: int, body: ItemTypeCreate, clock: Clock
) -> ItemType:
    await _check_code(session, tenant_id, body.code, 0)
    components = await _check_components(
        session, tenant_id=tenant_id, unit=body.unit, components=body.components, own_id=0
    )
    now = clock.now()
    row = ItemType(
        tenant_id=tenant_id,
        code=body.code,
        name=body.name,
        category=body.category,
        size=body.size,
        unit=body.unit,
        weight_grams=body.weight_grams,
        active=body.active,
        components=components,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    return row


async def update(
    session: AsyncSession, *, tenant_id: int, item_type_id: int, body: ItemTypeUpdate, clock: Clock
) -> ItemType:
    # Locked: a set being given this item as a component concurrently waits, then sees the unit.
    row = await get(session, tenant_id=tenant_id, item_type_id=item_type_id, lock=True)
    changes = body.model_dump(exclude_unset=True, by_alias=False)
    figures_before = _figures_of(row)
    if changes.get("unit") == "set" and row.unit != "set":
        containing = await repository.sets_containing(session, tenant_id, row.id)
        if containing:
            raise BadRequest(
                f"unit: the item type is a component of set {containing[0].code}, and a set is "
                "made of pieces; take it out of the set first"
            )
    if changes.get("code") is not None:
        await _check_code(session, tenant_id, changes["code"], row.id)
        row.code = changes["code"]
    for field in ("name", "category", "unit", "weight_grams", "active"):
        if changes.get(field) is not None:
            setattr(row, field, changes[field])
    if "size" in changes:
        row.size = changes["size"]
    components = (
        body.components
        if body.components is not None
        else [Component.model_validate(c) for c in row.components]
    )
    row.components = await _check_components(
        session, tenant_id=tenant_id, unit=row.unit, components=components, own_id=row.id,
        kept={int(c["itemTypeId"]) for c in row.components},
    )  # fmt: skip
    row.updated_at = clock.now()
    await session.flush()
    if _figures_of(row) != figures_before:
        # The open sheets' weights and costs follow, those holding a set made with it too.
        containing = await repository.sets_containing(session, tenant_id, row.id)
        reached = [row.id, *(kind.id for kind in containing)]
        await figures.changed(session, tenant_id=tenant_id, item_type_ids=reached, clock=clock)
    return row


def _figures_of(row: ItemType) -> tuple[int, str, list[tuple[int, int]]]:
    """What a sheet's weight and estimate read of an item type (besides the price lists)."""
    return row.weight_grams, row.unit, components_of(row)


async def _users(session: AsyncSession, tenant_id: int, item_type_id: int) -> list[str]:
    """What still refers to the item type: sets, par levels and price lists keep its id in
    JSON (no foreign key), sheet lines by a foreign key."""
    users = [
        f"set {kind.code}"
        for kind in await repository.sets_containing(session, tenant_id, item_type_id)
    ]
    return users + await USED_BY.of(session, tenant_id=tenant_id, row_id=item_type_id)


async def delete(session: AsyncSession, *, tenant_id: int, item_type_id: int) -> None:
    """Refused (409 ``in_use``) while anything refers to the item type. The row is locked
    first, so a reference written concurrently is either seen here or refused there."""
    row = await get(session, tenant_id=tenant_id, item_type_id=item_type_id, lock=True)
    refuse_while_used("item type", await _users(session, tenant_id, row.id))
    await delete_unless_used(session, row, what="item type")
