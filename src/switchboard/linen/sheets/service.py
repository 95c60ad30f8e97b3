"""Linen-sheet rules: the state machine, draft-only editing, counts and the cost estimate.

``draft -> confirmed -> delivered -> invoiced``; ``cancelled`` from draft or confirmed.
A confirmed sheet is not edited: it is cancelled and re-issued.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Collection, Iterable, Mapping, Sequence

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.kit.paging import PageParams
from switchboard.linen import common, figures
from switchboard.linen.hooks import Finder
from switchboard.linen.item_types import service as item_types
from switchboard.linen.item_types.models import ItemType
from switchboard.linen.laundries import service as laundries
from switchboard.linen.laundries.models import PriceList
from switchboard.linen.properties import service as properties
from switchboard.linen.properties.models import Property
from switchboard.linen.sheets import repository
from switchboard.linen.sheets.models import LinenSheet, SheetLine
from switchboard.linen.sheets.repository import SheetFilter
from switchboard.linen.sheets.schemas import DeliveryReport, LineIn, SheetCreate, SheetUpdate

STATUSES = ("draft", "confirmed", "delivered", "invoiced", "cancelled")
# Sheets whose weight and estimate follow the price lists and item types as they change; an
# invoiced or cancelled sheet keeps the figures it had when it was closed (docs/linen.md).
OPEN = ("draft", "confirmed", "delivered")
REFRESH_CHUNK = 500
# action -> the states it may start from; the target state is fixed per action.
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "confirm": (frozenset({"draft"}), "confirmed"),
    "cancel": (frozenset({"draft", "confirmed"}), "cancelled"),
    "deliver": (frozenset({"confirmed", "delivered"}), "delivered"),
    "invoice": (frozenset({"delivered"}), "invoiced"),
}
LATE_ORDER_NOTICE = dt.timedelta(days=1)
# A stated ``deliveredAt`` may be this far ahead of the portal's clock: a laundry's handheld
# that runs a little fast is not refused (docs/linen.md). Later is a 400.
CLOCK_SKEW = dt.timedelta(minutes=5)
TO_ORDER = "reactivate it to order"
# A sheet left without lines orders the par levels, one of which may have been retired since.
FROM_PAR = "it is a par level of the property: reactivate it, send lines, or take it off linenPar"


def next_status(current: str, action: str) -> str:
    """The state ``action`` leads to from ``current``; 409 ``invalid_transition`` otherwise."""
    sources, target = TRANSITIONS[action]
    if current not in sources:
        raise Conflict(f"cannot {action} a sheet in status {current}", code="invalid_transition")
    return target


def is_late(confirmed_at: dt.datetime, service_date: dt.date, timezone: str) -> bool:
    """Late: confirmed on the day before the service date or later, in the property's zone."""
    try:
        zone = zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        zone = zoneinfo.ZoneInfo("UTC")
    # A difference of two dates is always a date span, where a date less a day may not be a
    # date (0001-01-01): a sheet stored before dates were held to decision 0520's range.
    return service_date - confirmed_at.astimezone(zone).date() <= LATE_ORDER_NOTICE


def balance_due(line: SheetLine) -> int:
    return max(0, line.qty_ordered - (line.qty_delivered - line.qty_rejected))


def estimate(
    lines: Iterable[SheetLine],
    kinds: Mapping[int, ItemType],
    prices: PriceList | None,
    *,
    delivered: bool,
    late: bool,
) -> tuple[int, int | None]:
    """(weight in grams, estimated cost in minor units or None without a price list).

    Delivered sheets are costed on accepted counts, others on ordered counts; each line as
    ``line_cost`` says, and weighed as ``item_types.unit_weight`` says (docs/linen.md).
    ``kinds`` holds the lines' item types and their sets' components
    (``item_types.with_components``).
    """
    weight = 0
    cost = 0
    priced = {int(p["itemTypeId"]): int(p["unitPrice"]) for p in (prices.items if prices else [])}
    per_kg = prices.per_kg if prices is not None else None
    for line in lines:
        qty = line.qty_delivered - line.qty_rejected if delivered else line.qty_ordered
        qty = max(qty, 0)
        kind = kinds.get(line.item_type_id)
        if kind is not None:
            weight += qty * item_types.unit_weight(kind, kinds)
        cost += line_cost(line.item_type_id, qty, kinds, priced, per_kg)
    if prices is None:
        return weight, None
    cost += prices.delivery_fee + (prices.late_order_surcharge if late else 0)
    return weight, cost


def line_cost(
    item_type_id: int,
    qty: int,
    kinds: Mapping[int, ItemType],
    priced: Mapping[int, int],
    per_kg: int | None,
) -> int:
    """``qty`` units of one item type, in minor units, at the unit prices ``priced`` (item
    type id -> price) and the per-kg rate (docs/linen.md, decisions 0516 and 0519):

    - listed: its unit price (a set's own row wins over its components);
    - a set of no weight of its own (it weighs its components): what its components would
      cost as lines of their own;
    - a piece, or a set weighed as a bundle: its listed components at their unit prices, and
      unless all of them are listed, the rest of its weight (``unit_weight`` less what the
      listed components weigh) at the per-kg rate; so a set the list prices by weight alone
      costs its own weight, as a piece does;
    - what is left to the per-kg rate costs nothing when the list has none.
    """
    if item_type_id in priced:
        return qty * priced[item_type_id]
    kind = kinds.get(item_type_id)
    if kind is None:
        return 0
    components = item_types.components_of(kind)
    if components and kind.weight_grams <= 0:
        return sum(line_cost(i, qty * n, kinds, priced, per_kg) for i, n in components)
    listed = [(i, n) for i, n in components if i in priced]
    cost = sum(qty * n * priced[i] for i, n in listed)
    if per_kg is None or (components and len(listed) == len(components)):
        return cost
    listed_grams = sum(n * kinds[i].weight_grams for i, n in listed if i in kinds)
    grams = max(item_types.unit_weight(kind, kinds) - listed_grams, 0)
    return cost + round(qty * grams * per_kg / 1000)


async def get(session: AsyncSession, *, tenant_id: int, sheet_id: int) -> LinenSheet:
    row = await repository.get(session, tenant_id, sheet_id)
    if row is None:
        raise NotFound(f"no linen sheet {sheet_id}")
    return row


async def job(session: AsyncSession, *, tenant_id: int, laundry_id: int, job_id: int) -> LinenSheet:
    """A sheet as the Laundry API shows it: the laundry's own, once confirmed. A draft,
    another laundry's sheet and no sheet at all are the same 404, so a laundry cannot tell
    which sheets exist."""
    row = await repository.get(session, tenant_id, job_id)
    if row is None or row.laundry_id != laundry_id or row.confirmed_at is None:
        raise NotFound(f"no job {job_id}")
    return row


async def running_balance(
    session: AsyncSession, *, tenant_id: int, property_id: int, until: dt.date | None
) -> list[tuple[ItemType, int, int]]:
    """Per item type: ordered and accepted over the property's delivered sheets. Their
    difference is the balance the laundry still owes (negative: delivered ahead)."""
    await properties.get(session, tenant_id=tenant_id, property_id=property_id)
    rows = await repository.running_balance(session, tenant_id, property_id, until)
    kinds = await item_types.many(session, tenant_id=tenant_id, ids=[r[0] for r in rows])
    return [(kinds[i], ordered, accepted) for i, ordered, accepted in rows if i in kinds]


async def lines_of(
    session: AsyncSession, *, tenant_id: int, sheet_ids: list[int]
) -> dict[int, list[SheetLine]]:
    return await repository.lines_of(session, tenant_id, sheet_ids)


async def list_sheets(
    session: AsyncSession,
    *,
    tenant_id: int,
    where: SheetFilter,
    paging: PageParams,
    sort: str | None,
    default_sort: str = "-serviceDate",
) -> tuple[list[LinenSheet], int]:
    return await repository.list_page(
        session, tenant_id, where, paging=paging, sort=sort, default_sort=default_sort
    )


def parse_statuses(value: str | None) -> tuple[str, ...]:
    return common.parse_statuses(value, STATUSES)


async def _build_lines(
    session: AsyncSession, tenant_id: int, sheet_id: int, given: list[LineIn], hint: str = TO_ORDER
) -> list[SheetLine]:
    ids = [line.item_type_id for line in given]
    if len(set(ids)) != len(ids):
        raise BadRequest("lines: an item type is listed twice")
    found = await item_types.require_all(session, tenant_id=tenant_id, ids=ids, field="lines")
    await item_types.require_orderable(session, tenant_id=tenant_id, kinds=found, hint=hint)
    return [
        SheetLine(
            tenant_id=tenant_id,
            sheet_id=sheet_id,
            item_type_id=line.item_type_id,
            qty_ordered=line.qty_ordered,
            note=line.note,
        )
        for line in given
    ]


async def _figures(session: AsyncSession, rows: Sequence[LinenSheet]) -> list[LinenSheet]:
    """Set weight and estimate of ``rows`` (one tenant's) from their lines, the item types'
    weights and the price list in force on each service date; the rows that changed."""
    if not rows:
        return []
    tenant_id = rows[0].tenant_id
    lines = await repository.lines_of(session, tenant_id, [row.id for row in rows])
    kinds = await item_types.with_components(
        session, tenant_id=tenant_id, ids=[ln.item_type_id for got in lines.values() for ln in got]
    )
    price_lists = await laundries.price_lists_of(
        session, tenant_id=tenant_id, laundry_ids={row.laundry_id for row in rows}
    )
    changed = []
    for sheet in rows:
        prices = laundries.in_force(price_lists.get(sheet.laundry_id, []), sheet.service_date)
        delivered = sheet.status in ("delivered", "invoiced")
        weight, cost = estimate(
            lines.get(sheet.id, []), kinds, prices, delivered=delivered, late=sheet.late_order
        )
        currency = prices.currency if prices else None
        if (weight, cost, currency) != (sheet.weight_grams, sheet.estimated_cost, sheet.currency):
            sheet.weight_grams, sheet.estimated_cost, sheet.currency = weight, cost, currency
            changed.append(sheet)
    return changed


async def _recompute(session: AsyncSession, sheet: LinenSheet) -> None:
    await _figures(session, [sheet])


async def refresh_figures(
    session: AsyncSession,
    *,
    tenant_id: int,
    clock: Clock,
    laundry_id: int | None = None,
    start: dt.date | None = None,
    end: dt.date | None = None,
    item_type_ids: Collection[int] | None = None,
) -> int:
    """Recompute the open sheets a change of prices (a laundry's, for service dates
    ``start..end``) or of item types (sheets with a line of one of ``item_type_ids``) reaches,
    in the caller's transaction; a sheet whose figures change is updated (``updatedAt``), so
    pollers see it. The count changed."""
    now = clock.now()
    changed = 0
    after_id = 0
    while True:
        chunk = await repository.open_chunk(
            session, tenant_id, OPEN, laundry_id=laundry_id, start=start, end=end,
            item_type_ids=item_type_ids, after_id=after_id, limit=REFRESH_CHUNK,
        )  # fmt: skip
        if not chunk:
            return changed
        for sheet in await _figures(session, chunk):
            sheet.updated_at = now
            changed += 1
        await session.flush()
        after_id = chunk[-1].id


def _sheets_naming(by: repository.Naming) -> Finder:
    async def naming(session: AsyncSession, *, tenant_id: int, row_id: int) -> list[str]:
        numbers = await repository.numbers_naming(session, tenant_id, by, row_id, limit=4)
        return [f"sheet {number}" for number in numbers]

    return naming


# Item types and price lists, which this module is built on, report their changes through
# ``figures``; the open sheets follow them here. An item type on a sheet's line, a sheet's
# property and its laundry are kept from deletion (the foreign keys would refuse them too;
# the refusal names the sheets).
figures.follow(refresh_figures)
item_types.USED_BY.register("sheets", _sheets_naming("item_type_id"))
properties.USED_BY.register("sheets", _sheets_naming("property_id"))
laundries.USED_BY.register("sheets", _sheets_naming("laundry_id"))


def _check_dates(service_date: dt.date, pickup_date: dt.date | None) -> None:
    if pickup_date is not None and pickup_date < service_date:
        raise BadRequest("pickupDate: must not be before serviceDate")


async def _numbered(session: AsyncSession, sheet: LinenSheet) -> LinenSheet:
    """Give ``sheet`` the next number of its tenant and year and insert it. Two concurrent
    creations may pick the same number: the unique constraint refuses the second, which is
    answered 409 ``busy`` (nothing was written; the client retries)."""
    sheet.seq = await repository.next_seq(session, sheet.tenant_id, sheet.year)
    sheet.number = f"LS-{sheet.year}-{sheet.seq:06d}"
    session.add(sheet)
    try:
        await session.flush()
    except IntegrityError:
        raise Conflict("another sheet took this number; retry the request", code="busy") from None
    return sheet


async def create(
    session: AsyncSession, *, tenant_id: int, body: SheetCreate, actor: str, clock: Clock
) -> LinenSheet:
    prop = await properties.require_reference(
        session, tenant_id=tenant_id, property_id=body.property_id, field="propertyId"
    )
    laundry_id = body.laundry_id or prop.default_laundry_id
    if laundry_id is None:
        raise BadRequest("laundryId: required, the property has no default laundry")
    laundry = await laundries.require_reference(
        session, tenant_id=tenant_id, laundry_id=laundry_id, field="laundryId"
    )
    common.require_active([prop], hint=TO_ORDER)
    if body.laundry_id is None:  # the property's default, which may have been retired since
        common.require_active(
            [laundry], hint="it is the property's default laundry: name an active laundryId"
        )
    common.require_active([laundry], hint=TO_ORDER)
    _check_dates(body.service_date, body.pickup_date)
    now = clock.now()
    sheet = await _numbered(
        session,
        LinenSheet(
            tenant_id=tenant_id,
            year=now.year,
            property_id=prop.id,
            laundry_id=laundry_id,
            service_date=body.service_date,
            pickup_date=body.pickup_date,
            reason=body.reason,
            booking_ref=body.booking_ref,
            guest_count=body.guest_count,
            status="draft",
            notes=body.notes,
            created_at=now,
            created_by=actor,
            updated_at=now,
        ),
    )
    given, hint = body.lines, TO_ORDER
    if "lines" not in body.model_fields_set:  # no lines sent: order the property's par levels
        hint = FROM_PAR
        given = [
            LineIn(item_type_id=int(par["itemTypeId"]), qty_ordered=int(par["qty"]))
            for par in prop.linen_par
            if int(par["qty"]) > 0
        ]
    lines = await _build_lines(session, tenant_id, sheet.id, given, hint)
    await repository.replace_lines(session, tenant_id, sheet.id, lines)
    await _recompute(session, sheet)
    await session.flush()
    return sheet


async def update(
    session: AsyncSession, *, tenant_id: int, sheet_id: int, body: SheetUpdate, clock: Clock
) -> LinenSheet:
    sheet = await get(session, tenant_id=tenant_id, sheet_id=sheet_id)
    if sheet.status != "draft":
        raise Conflict(
            f"only drafts are editable; this sheet is {sheet.status} (cancel and re-issue it)",
            code="not_editable",
        )
    given = body.model_fields_set
    if body.laundry_id is not None:
        laundry = await laundries.require_reference(
            session, tenant_id=tenant_id, laundry_id=body.laundry_id, field="laundryId"
        )
        common.require_active([laundry], hint=TO_ORDER)
        sheet.laundry_id = body.laundry_id
    if body.service_date is not None:
        sheet.service_date = body.service_date
    if "pickup_date" in given:
        sheet.pickup_date = body.pickup_date
    _check_dates(sheet.service_date, sheet.pickup_date)
    if body.reason is not None:
        sheet.reason = body.reason
    if body.booking_ref is not None:
        sheet.booking_ref = body.booking_ref
    if "guest_count" in given:
        sheet.guest_count = body.guest_count
    if body.notes is not None:
        sheet.notes = body.notes
    if body.lines is not None:
        new_lines = await _build_lines(session, tenant_id, sheet.id, body.lines)
        await repository.replace_lines(session, tenant_id, sheet.id, new_lines)
    sheet.updated_at = clock.now()
    await _recompute(session, sheet)
    await session.flush()
    return sheet


async def delete(session: AsyncSession, *, tenant_id: int, sheet_id: int) -> None:
    sheet = await get(session, tenant_id=tenant_id, sheet_id=sheet_id)
    if sheet.status != "draft":
        raise Conflict(
            f"only drafts are deleted; this sheet is {sheet.status} (cancel it instead)",
            code="not_editable",
        )
    await session.delete(sheet)
    await session.flush()


async def _require_active_references(
    session: AsyncSession, sheet: LinenSheet, lines: Sequence[SheetLine]
) -> Property:
    """409 ``inactive`` when the draft's property, laundry, one of its item types or a component
    of a set on it was deactivated after it was written: confirming makes the order a laundry
    works on, and a retired one takes no new order (decisions 0517, 0523). The property, for
    the late-order rule."""
    tenant_id = sheet.tenant_id
    prop = await properties.get(session, tenant_id=tenant_id, property_id=sheet.property_id)
    laundry = await laundries.get(session, tenant_id=tenant_id, laundry_id=sheet.laundry_id)
    common.require_active([prop], hint=TO_ORDER, field="propertyId")
    common.require_active(
        [laundry], hint="reactivate it, or give the draft another laundryId", field="laundryId"
    )
    kinds = await item_types.many(session, tenant_id=tenant_id, ids=[i.item_type_id for i in lines])
    hint = "reactivate it, or take it off the draft"
    await item_types.require_orderable(session, tenant_id=tenant_id, kinds=kinds, hint=hint)
    return prop


async def confirm(
    session: AsyncSession, *, tenant_id: int, sheet_id: int, actor: str, clock: Clock
) -> LinenSheet:
    sheet = await get(session, tenant_id=tenant_id, sheet_id=sheet_id)
    target = next_status(sheet.status, "confirm")
    lines = (await repository.lines_of(session, tenant_id, [sheet.id])).get(sheet.id, [])
    if not any(line.qty_ordered > 0 for line in lines):
        raise Conflict("a sheet needs at least one ordered item to be confirmed", code="empty")
    prop = await _require_active_references(session, sheet, lines)
    now = clock.now()
    sheet.status = target
    sheet.confirmed_at = now
    sheet.confirmed_by = actor
    sheet.late_order = is_late(now, sheet.service_date, prop.timezone)
    sheet.updated_at = now
    await _recompute(session, sheet)
    await session.flush()
    return sheet


async def cancel(
    session: AsyncSession, *, tenant_id: int, sheet_id: int, reason: str, actor: str, clock: Clock
) -> LinenSheet:
    sheet = await get(session, tenant_id=tenant_id, sheet_id=sheet_id)
    sheet.status = next_status(sheet.status, "cancel")
    now = clock.now()
    sheet.cancelled_at = now
    sheet.cancelled_by = actor
    sheet.cancel_reason = reason
    sheet.updated_at = now
    await session.flush()
    return sheet


async def report_delivery(
    session: AsyncSession,
    *,
    tenant_id: int,
    sheet_id: int,
    body: DeliveryReport,
    actor: str,
    clock: Clock,
    laundry_id: int | None = None,
) -> LinenSheet:
    """Record delivered/collected/rejected counts; ``laundry_id`` limits it to that laundry's
    confirmed jobs (the Laundry API). A correction is allowed until the sheet is invoiced."""
    if laundry_id is None:
        sheet = await get(session, tenant_id=tenant_id, sheet_id=sheet_id)
    else:
        sheet = await job(session, tenant_id=tenant_id, laundry_id=laundry_id, job_id=sheet_id)
    target = next_status(sheet.status, "deliver")
    now = clock.now()
    delivered_at = now
    if body.delivered_at is not None:  # a time without an offset is taken as UTC
        stated = body.delivered_at
        delivered_at = stated.replace(tzinfo=dt.UTC) if stated.tzinfo is None else stated
        delivered_at = delivered_at.astimezone(dt.UTC)
    if delivered_at > now + CLOCK_SKEW:
        raise BadRequest(
            "deliveredAt: must not be in the future (at most 5 minutes ahead of the portal's "
            "clock, for the skew of a device's clock)"
        )
    ids = [line.item_type_id for line in body.lines]
    if len(set(ids)) != len(ids):
        raise BadRequest("lines: an item type is listed twice")
    await item_types.require_all(session, tenant_id=tenant_id, ids=ids, field="lines")
    for given in body.lines:
        if given.qty_rejected > given.qty_delivered:
            raise BadRequest("lines: qtyRejected cannot exceed qtyDelivered")
    existing = {
        line.item_type_id: line
        for line in (await repository.lines_of(session, tenant_id, [sheet.id])).get(sheet.id, [])
    }
    for given in body.lines:
        line = existing.get(given.item_type_id)
        if line is None:  # collected or delivered without having been ordered
            line = SheetLine(
                tenant_id=tenant_id, sheet_id=sheet.id, item_type_id=given.item_type_id,
                qty_ordered=0, note="",
            )  # fmt: skip
            session.add(line)
        line.qty_delivered = given.qty_delivered
        line.qty_collected = given.qty_collected
        line.qty_rejected = given.qty_rejected
        if given.note is not None:
            line.note = given.note
    sheet.status = target
    sheet.delivered_at = delivered_at
    sheet.reported_by = actor
    sheet.updated_at = now
    await session.flush()
    await _recompute(session, sheet)
    await session.flush()
    return sheet


async def laundry_serves(
    session: AsyncSession, *, tenant_id: int, laundry_id: int, property: Property
) -> bool:
    """Whether the laundry serves ``property``: it is the property's default laundry, or it has
    had a sheet of it. What a laundry may put on its own invoices (decision 0521)."""
    if property.default_laundry_id == laundry_id:
        return True
    return await repository.has_sheet_for(
        session, tenant_id, laundry_id=laundry_id, property_id=property.id
    )


async def mark_invoiced(
    session: AsyncSession,
    *,
    tenant_id: int,
    laundry_id: int,
    sheet_ids: list[int],
    invoice_id: int,
    clock: Clock,
) -> dict[int, LinenSheet]:
    """Link delivered sheets of ``laundry_id`` to an invoice, moving them to ``invoiced``."""
    found = await repository.many(session, tenant_id, sheet_ids)
    now = clock.now()
    for sheet_id in dict.fromkeys(sheet_ids):
        sheet = found.get(sheet_id)
        if sheet is None or sheet.laundry_id != laundry_id or sheet.confirmed_at is None:
            raise BadRequest(f"lines: unknown job {sheet_id}", code="unknown_reference")
        if sheet.status != "delivered":
            raise Conflict(
                f"sheet {sheet.number} is {sheet.status}; only delivered sheets are invoiced",
                code="sheet_not_invoiceable",
            )
        sheet.status = next_status(sheet.status, "invoice")
        sheet.invoice_id = invoice_id
        sheet.updated_at = now
    await session.flush()
    return found
