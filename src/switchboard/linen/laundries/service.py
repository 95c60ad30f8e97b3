"""Laundry rules: keys shown once and stored hashed, price lists that do not overlap."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.kit.crypto import random_token, sha256_hex
from switchboard.kit.errors import BadRequest, Conflict, NotFound, Unauthorized
from switchboard.kit.paging import PageParams
from switchboard.linen import figures
from switchboard.linen.common import check_range, delete_unless_used, refuse_while_used
from switchboard.linen.hooks import Uses
from switchboard.linen.item_types import service as item_types
from switchboard.linen.laundries import repository
from switchboard.linen.laundries.models import Laundry, LaundryKey, PriceList
from switchboard.linen.laundries.schemas import LaundryCreate, LaundryUpdate, PriceListIn

# What may keep a laundry from deletion, each feature built on laundries registered by its
# service, in the order a refused delete names them.
USED_BY = Uses("a laundry", "sheets", "invoices")
KEY_PREFIX = "lk_"
KEY_TOUCH_EVERY = dt.timedelta(seconds=60)


async def get(session: AsyncSession, *, tenant_id: int, laundry_id: int) -> Laundry:
    row = await repository.get(session, tenant_id, laundry_id)
    if row is None:
        raise NotFound(f"no laundry {laundry_id}")
    return row


async def many(session: AsyncSession, *, tenant_id: int, ids: list[int]) -> dict[int, Laundry]:
    return await repository.many(session, tenant_id, ids)


async def require_reference(
    session: AsyncSession, *, tenant_id: int, laundry_id: int, field: str
) -> Laundry:
    row = await repository.get(session, tenant_id, laundry_id)
    if row is None:
        raise BadRequest(f"{field}: unknown laundry {laundry_id}", code="unknown_reference")
    return row


async def list_laundries(
    session: AsyncSession,
    *,
    tenant_id: int,
    active: bool | None,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[Laundry], int]:
    return await repository.list_page(session, tenant_id, active=active, paging=paging, sort=sort)


async def create(
    session: AsyncSession, *, tenant_id: int, body: LaundryCreate, clock: Clock
) -> Laundry:
    now = clock.now()
    row = Laundry(
        tenant_id=tenant_id,
        name=body.name,
        contact_name=body.contact_name,
        email=body.email,
        phone=body.phone,
        address=body.address.model_dump(),
        vat_id=body.vat_id,
        active=body.active,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    return row


async def update(
    session: AsyncSession, *, tenant_id: int, laundry_id: int, body: LaundryUpdate, clock: Clock
) -> Laundry:
    row = await get(session, tenant_id=tenant_id, laundry_id=laundry_id)
    changes = body.model_dump(exclude_unset=True, exclude_none=True)
    for field, value in changes.items():
        setattr(row, field, value)
    row.updated_at = clock.now()
    await session.flush()
    return row


async def delete(session: AsyncSession, *, tenant_id: int, laundry_id: int) -> None:
    """Refused (409 ``in_use``) while sheets or invoices name the laundry; their foreign keys
    refuse one written meanwhile. Its keys and price lists go with it."""
    row = await get(session, tenant_id=tenant_id, laundry_id=laundry_id)
    refuse_while_used("laundry", await USED_BY.of(session, tenant_id=tenant_id, row_id=row.id))
    await delete_unless_used(session, row, what="laundry")


# --- API keys of the Laundry API ---------------------------------------------------------


async def list_keys(
    session: AsyncSession, *, tenant_id: int, laundry_id: int, paging: PageParams
) -> tuple[list[LaundryKey], int]:
    await get(session, tenant_id=tenant_id, laundry_id=laundry_id)
    return await repository.keys_page(session, tenant_id, laundry_id, paging)


async def issue_key(
    session: AsyncSession,
    *,
    tenant_id: int,
    laundry_id: int,
    name: str,
    created_by: str,
    clock: Clock,
) -> tuple[LaundryKey, str]:
    """A new key; the plaintext is returned once and never stored."""
    await get(session, tenant_id=tenant_id, laundry_id=laundry_id)
    plaintext = random_token(KEY_PREFIX, 32)
    row = LaundryKey(
        tenant_id=tenant_id,
        laundry_id=laundry_id,
        name=name,
        prefix=plaintext[:10],
        key_hash=sha256_hex(plaintext),
        created_at=clock.now(),
        created_by=created_by,
    )
    session.add(row)
    await session.flush()
    return row, plaintext


async def _live_key(
    session: AsyncSession, tenant_id: int, laundry_id: int, key_id: int
) -> LaundryKey:
    row = await repository.get_key(session, tenant_id, laundry_id, key_id)
    if row is None:
        raise NotFound(f"no key {key_id} for laundry {laundry_id}")
    if row.revoked_at is not None:
        raise Conflict("the key is already revoked", code="key_revoked")
    return row


async def live_key(
    session: AsyncSession, *, tenant_id: int, laundry_id: int, key_id: int
) -> LaundryKey:
    """A key of the laundry that still works: 404 when there is none, 409 once revoked."""
    return await _live_key(session, tenant_id, laundry_id, key_id)


async def revoke_key(
    session: AsyncSession, *, tenant_id: int, laundry_id: int, key_id: int, clock: Clock
) -> LaundryKey:
    row = await _live_key(session, tenant_id, laundry_id, key_id)
    row.revoked_at = clock.now()
    await session.flush()
    return row


async def rotate_key(
    session: AsyncSession,
    *,
    tenant_id: int,
    laundry_id: int,
    key_id: int,
    created_by: str,
    clock: Clock,
) -> tuple[LaundryKey, str]:
    """Revoke the key and issue its successor under the same name, in one transaction."""
    old = await _live_key(session, tenant_id, laundry_id, key_id)
    old.revoked_at = clock.now()
    return await issue_key(
        session, tenant_id=tenant_id, laundry_id=laundry_id, name=old.name,
        created_by=created_by, clock=clock,
    )  # fmt: skip


async def authenticate(
    session: AsyncSession, *, tenant_id: int, token: str, clock: Clock
) -> Laundry:
    """The laundry a key of this tenant belongs to; 401 for anything else."""
    if not token.startswith(KEY_PREFIX):
        raise Unauthorized("the Laundry API needs the laundry's own key (lk_...)")
    key = await repository.key_by_hash(session, tenant_id, sha256_hex(token))
    if key is None:
        raise Unauthorized("unknown laundry key")
    if key.revoked_at is not None:
        raise Unauthorized("the laundry key was revoked")
    laundry = await repository.get(session, tenant_id, key.laundry_id)
    if laundry is None or not laundry.active:
        raise Unauthorized("the laundry is deactivated")
    now = clock.now()
    if key.last_used_at is None or now - key.last_used_at > KEY_TOUCH_EVERY:
        key.last_used_at = now
    return laundry


# --- price lists -------------------------------------------------------------------------


async def list_price_lists(
    session: AsyncSession, *, tenant_id: int, laundry_id: int, paging: PageParams
) -> tuple[list[PriceList], int]:
    await get(session, tenant_id=tenant_id, laundry_id=laundry_id)
    return await repository.price_lists_page(session, tenant_id, laundry_id, paging)


async def get_price_list(
    session: AsyncSession, *, tenant_id: int, laundry_id: int, price_list_id: int
) -> PriceList:
    row = await repository.get_price_list(session, tenant_id, laundry_id, price_list_id)
    if row is None:
        raise NotFound(f"no price list {price_list_id} for laundry {laundry_id}")
    return row


async def _check_price_list(
    session: AsyncSession, tenant_id: int, laundry_id: int, body: PriceListIn, own_id: int
) -> None:
    check_range(body.valid_from, body.valid_to, ("validFrom", "validTo"))
    ids = [item.item_type_id for item in body.items]
    if len(set(ids)) != len(ids):
        raise BadRequest("items: an item type is priced twice")
    await item_types.require_all(
        session, tenant_id=tenant_id, ids=ids, field="items", referenced=True
    )
    clash = await repository.overlapping(
        session, tenant_id, laundry_id, currency=body.currency, start=body.valid_from,
        end=body.valid_to, exclude_id=own_id,
    )  # fmt: skip
    if clash is not None:
        raise Conflict(
            f"the validity overlaps price list {clash.id} in {body.currency}",
            code="overlapping_price_list",
        )


def _apply(row: PriceList, body: PriceListIn) -> None:
    row.name = body.name
    row.currency = body.currency
    row.valid_from = body.valid_from
    row.valid_to = body.valid_to
    row.per_kg = body.per_kg
    row.delivery_fee = body.delivery_fee
    row.late_order_surcharge = body.late_order_surcharge
    row.items = [
        {
            "itemTypeId": item.item_type_id,
            "unitPrice": item.unit_price,
            "lostItemPrice": item.lost_item_price,
        }
        for item in body.items
    ]


async def create_price_list(
    session: AsyncSession, *, tenant_id: int, laundry_id: int, body: PriceListIn, clock: Clock
) -> PriceList:
    await get(session, tenant_id=tenant_id, laundry_id=laundry_id)
    await _check_price_list(session, tenant_id, laundry_id, body, 0)
    now = clock.now()
    row = PriceList(tenant_id=tenant_id, laundry_id=laundry_id, created_at=now, updated_at=now)
    _apply(row, body)
    session.add(row)
    await session.flush()
    await _refresh_sheets(
        session, tenant_id=tenant_id, laundry_id=laundry_id, spans=[_validity(row)], clock=clock
    )
    return row


async def replace_price_list(
    session: AsyncSession,
    *,
    tenant_id: int,
    laundry_id: int,
    price_list_id: int,
    body: PriceListIn,
    clock: Clock,
) -> PriceList:
    row = await get_price_list(
        session, tenant_id=tenant_id, laundry_id=laundry_id, price_list_id=price_list_id
    )
    await _check_price_list(session, tenant_id, laundry_id, body, row.id)
    before = _validity(row)
    _apply(row, body)
    row.updated_at = clock.now()
    await session.flush()
    await _refresh_sheets(
        session, tenant_id=tenant_id, laundry_id=laundry_id, spans=[before, _validity(row)],
        clock=clock,
    )  # fmt: skip
    return row


async def delete_price_list(
    session: AsyncSession, *, tenant_id: int, laundry_id: int, price_list_id: int, clock: Clock
) -> None:
    row = await get_price_list(
        session, tenant_id=tenant_id, laundry_id=laundry_id, price_list_id=price_list_id
    )
    span = _validity(row)
    await session.delete(row)
    await session.flush()
    await _refresh_sheets(
        session, tenant_id=tenant_id, laundry_id=laundry_id, spans=[span], clock=clock
    )


async def _price_lists_naming(session: AsyncSession, *, tenant_id: int, row_id: int) -> list[str]:
    pricing = await repository.price_lists_pricing(session, tenant_id, row_id)
    return [f"price list {price_list_id} of {laundry}" for price_list_id, laundry in pricing]


# Price lists are built on item types: an item type they price is kept from deletion.
item_types.USED_BY.register("laundries", _price_lists_naming)


async def price_lists_of(
    session: AsyncSession, *, tenant_id: int, laundry_ids: Iterable[int]
) -> dict[int, list[PriceList]]:
    """Every price list of the laundries, per laundry (a handful each)."""
    result: dict[int, list[PriceList]] = defaultdict(list)
    for row in await repository.price_lists_of(session, tenant_id, laundry_ids):
        result[row.laundry_id].append(row)
    return result


def in_force(lists: Iterable[PriceList], day: dt.date) -> PriceList | None:
    """The price list in force on ``day`` among one laundry's: valid on that day, the
    latest-starting one (then the newest) when two of different currencies both are."""
    valid = [p for p in lists if p.valid_from <= day and (p.valid_to is None or p.valid_to >= day)]
    return max(valid, key=lambda p: (p.valid_from, p.id), default=None)


def _validity(row: PriceList) -> tuple[dt.date, dt.date | None]:
    return row.valid_from, row.valid_to


async def _refresh_sheets(
    session: AsyncSession,
    *,
    tenant_id: int,
    laundry_id: int,
    spans: list[tuple[dt.date, dt.date | None]],
    clock: Clock,
) -> None:
    """The sheets' estimates follow their laundry's price lists: recompute those of the
    service dates the change reaches (the old and the new validity), in this transaction."""
    start = min(span[0] for span in spans)
    ends = [span[1] for span in spans]
    end = None if None in ends else max(e for e in ends if e is not None)
    await figures.changed(
        session, tenant_id=tenant_id, laundry_id=laundry_id, start=start, end=end, clock=clock
    )
