"""Property rules: unique codes, references to the tenant's own laundries, item types, groups."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.kit.paging import PageParams
from switchboard.linen.common import delete_unless_used, refuse_while_used, require_active
from switchboard.linen.groups import service as groups
from switchboard.linen.hooks import Uses
from switchboard.linen.item_types import service as item_types
from switchboard.linen.laundries import service as laundries
from switchboard.linen.properties import repository
from switchboard.linen.properties.models import Property
from switchboard.linen.properties.schemas import ParLine, PropertyCreate, PropertyUpdate

# What may keep a property from deletion, each feature built on properties registered by its
# service, in the order a refused delete names them.
USED_BY = Uses("a property", "sheets", "invoices", "vault")


async def get(session: AsyncSession, *, tenant_id: int, property_id: int) -> Property:
    row = await repository.get(session, tenant_id, property_id)
    if row is None:
        raise NotFound(f"no property {property_id}")
    return row


async def many(session: AsyncSession, *, tenant_id: int, ids: list[int]) -> dict[int, Property]:
    return await repository.many(session, tenant_id, ids)


async def require_reference(
    session: AsyncSession, *, tenant_id: int, property_id: int, field: str
) -> Property:
    row = await repository.get(session, tenant_id, property_id)
    if row is None:
        raise unknown_property(property_id, field=field)
    return row


def unknown_property(property_id: int, *, field: str) -> BadRequest:
    """The refusal of a reference to a property that does not exist, or is not the caller's to
    name (the same words, so the two cannot be told apart)."""
    return BadRequest(f"{field}: unknown property {property_id}", code="unknown_reference")


async def list_properties(
    session: AsyncSession,
    *,
    tenant_id: int,
    active: bool | None,
    group_id: int | None,
    laundry_id: int | None,
    q: str | None,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[Property], int]:
    return await repository.list_page(
        session, tenant_id, active=active, group_id=group_id, laundry_id=laundry_id, q=q,
        paging=paging, sort=sort,
    )  # fmt: skip


async def _check_code(session: AsyncSession, tenant_id: int, code: str, own_id: int) -> None:
    other = await repository.by_code(session, tenant_id, code)
    if other is not None and other.id != own_id:
        raise Conflict(f"property code {code!r} already exists", code="duplicate_code")


async def _check_default_laundry(
    session: AsyncSession, tenant_id: int, laundry_id: int | None, *, current: int | None
) -> None:
    """A default laundry is one of the tenant's (400 ``unknown_reference``) and active (409
    ``inactive``). The one the property already names stays allowed after it was deactivated,
    so that a form or client sending the property back unchanged is not refused."""
    if laundry_id is None:
        return
    laundry = await laundries.require_reference(
        session, tenant_id=tenant_id, laundry_id=laundry_id, field="defaultLaundryId"
    )
    if laundry.id != current:
        require_active([laundry], hint="choose an active laundry", field="defaultLaundryId")


async def _check_par(
    session: AsyncSession, tenant_id: int, par: list[ParLine], *, current: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Par levels name the tenant's item types, each once, and active ones (409 ``inactive``):
    a sheet made from them orders them. One the property already lists stays allowed after it
    was deactivated, so that a form sending the par levels back is not refused (decision
    0524)."""
    await item_types.require_chosen(
        session, tenant_id=tenant_id, ids=[line.item_type_id for line in par], field="linenPar",
        hint="reactivate it, or leave it out of the par levels",
        kept={int(line["itemTypeId"]) for line in current},
    )  # fmt: skip
    return [{"itemTypeId": line.item_type_id, "qty": line.qty} for line in par]


async def create(
    session: AsyncSession, *, tenant_id: int, body: PropertyCreate, clock: Clock
) -> Property:
    await _check_code(session, tenant_id, body.code, 0)
    await _check_default_laundry(session, tenant_id, body.default_laundry_id, current=None)
    linen_par = await _check_par(session, tenant_id, body.linen_par, current=[])
    await groups.require_ids(session, tenant_id=tenant_id, ids=body.group_ids, field="groupIds")
    now = clock.now()
    row = Property(
        tenant_id=tenant_id,
        code=body.code,
        name=body.name,
        external_ref=body.external_ref,
        active=body.active,
        address=body.address.model_dump(),
        timezone=body.timezone,
        bedrooms=body.bedrooms,
        bathrooms=body.bathrooms,
        max_guests=body.max_guests,
        beds=[{"bedType": b.bed_type, "count": b.count} for b in body.beds],
        default_laundry_id=body.default_laundry_id,
        linen_par=linen_par,
        delivery_note=body.delivery_note,
        notes=body.notes,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    await groups.set_groups_of_property(
        session, tenant_id=tenant_id, property_id=row.id, group_ids=body.group_ids
    )
    return row


async def update(
    session: AsyncSession, *, tenant_id: int, property_id: int, body: PropertyUpdate, clock: Clock
) -> Property:
    row = await get(session, tenant_id=tenant_id, property_id=property_id)
    given = body.model_fields_set
    if body.code is not None:
        await _check_code(session, tenant_id, body.code, row.id)
        row.code = body.code
    for field in (
        "name", "external_ref", "active", "timezone", "bedrooms", "bathrooms", "max_guests",
        "delivery_note", "notes",
    ):  # fmt: skip
        value = getattr(body, field)
        if value is not None:
            setattr(row, field, value)
    if body.address is not None:
        row.address = body.address.model_dump()
    if body.beds is not None:
        row.beds = [{"bedType": b.bed_type, "count": b.count} for b in body.beds]
    if "default_laundry_id" in given:
        await _check_default_laundry(
            session, tenant_id, body.default_laundry_id, current=row.default_laundry_id
        )
        row.default_laundry_id = body.default_laundry_id
    if body.linen_par is not None:
        row.linen_par = await _check_par(session, tenant_id, body.linen_par, current=row.linen_par)
    if body.group_ids is not None:
        await groups.set_groups_of_property(
            session, tenant_id=tenant_id, property_id=row.id, group_ids=body.group_ids
        )
    row.updated_at = clock.now()
    await session.flush()
    return row


async def delete(session: AsyncSession, *, tenant_id: int, property_id: int) -> None:
    """Refused (409 ``in_use``) while sheets, invoice lines or vault entries name the property;
    their foreign keys refuse one written meanwhile."""
    row = await get(session, tenant_id=tenant_id, property_id=property_id)
    refuse_while_used("property", await USED_BY.of(session, tenant_id=tenant_id, row_id=row.id))
    await delete_unless_used(session, row, what="property")


async def _par_levels_naming(session: AsyncSession, *, tenant_id: int, row_id: int) -> list[str]:
    codes = await repository.codes_with_par_of(session, tenant_id, row_id)
    return [f"the par levels of property {code}" for code in codes]


# Groups and item types, which properties are built on, reach properties through these: a
# group's members are checked against the tenant's properties, and an item type named by par
# levels is kept from deletion.
groups.MEMBERS.register(repository.existing_ids)
item_types.USED_BY.register("properties", _par_levels_naming)
