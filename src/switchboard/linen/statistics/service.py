"""Statistics rows from the grouped queries: keyed, labelled and merged per key."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.linen.common import Money, check_range
from switchboard.linen.groups import service as groups
from switchboard.linen.item_types import service as item_types
from switchboard.linen.laundries import service as laundries
from switchboard.linen.properties import service as properties
from switchboard.linen.statistics import repository
from switchboard.linen.statistics.repository import StatsQuery
from switchboard.linen.statistics.schemas import ItemCount, StatisticsRow

DEFAULT_MONTHS = 12


def default_range(clock: Clock) -> tuple[dt.date, dt.date]:
    """The last twelve calendar months, this one included."""
    today = clock.now().date()
    month = today.month - (DEFAULT_MONTHS - 1)
    year = today.year
    while month <= 0:
        month += 12
        year -= 1
    return dt.date(year, month, 1), today


async def _labels(session: AsyncSession, query: StatsQuery, keys: list[Any]) -> dict[Any, str]:
    ids = [int(k) for k in keys]
    if query.group_by == "property":
        found = await properties.many(session, tenant_id=query.tenant_id, ids=ids)
        return {k: f"{p.code} {p.name}" for k, p in found.items()}
    if query.group_by == "laundry":
        rows = await laundries.many(session, tenant_id=query.tenant_id, ids=ids)
        return {k: r.name for k, r in rows.items()}
    named = await groups.many(session, tenant_id=query.tenant_id, ids=ids)
    return {k: g.name for k, g in named.items()}


async def statistics(session: AsyncSession, query: StatsQuery) -> list[StatisticsRow]:
    check_range(query.date_from, query.date_to)
    dialect = session.get_bind().dialect.name
    counts: dict[Any, list[int]] = {}
    estimated: dict[Any, list[Money]] = defaultdict(list)
    for key, currency, sheets, grams, cost in await repository.totals(session, query, dialect):
        total = counts.setdefault(key, [0, 0])
        total[0] += sheets
        total[1] += grams
        if currency is not None and cost is not None:
            estimated[key].append(Money(amount=cost, currency=currency))
    invoiced: dict[Any, list[Money]] = defaultdict(list)
    for key, currency, amount in await repository.invoiced(session, query, dialect):
        invoiced[key].append(Money(amount=amount, currency=currency))
    item_rows = await repository.items(session, query, dialect)
    kinds = await item_types.many(
        session, tenant_id=query.tenant_id, ids=list({row[1] for row in item_rows})
    )
    items: dict[Any, list[ItemCount]] = defaultdict(list)
    for key, item_type_id, qty in item_rows:
        code = kinds[item_type_id].code if item_type_id in kinds else str(item_type_id)
        items[key].append(ItemCount(item_type_id=item_type_id, code=code, qty=qty))
    totals = [(key, sheets, grams) for key, (sheets, grams) in counts.items()]
    keys = [key for key, _, _ in totals]
    labels = {} if query.group_by == "month" else await _labels(session, query, keys)
    whole_range = f"{query.date_from.isoformat()}/{query.date_to.isoformat()}"
    rows = [
        StatisticsRow(
            period=str(key) if query.group_by == "month" else whole_range,
            key=str(key),
            label=labels.get(key, str(key)),
            sheets=count,
            items_by_type=sorted(items.get(key, []), key=lambda i: i.code),
            weight_kg=grams / 1000,
            estimated_cost=sorted(estimated.get(key, []), key=lambda m: m.currency),
            invoiced_cost=sorted(invoiced.get(key, []), key=lambda m: m.currency),
        )
        for key, count, grams in totals
    ]
    if query.group_by == "month":
        rows.sort(key=lambda r: r.key)
    else:
        rows.sort(key=lambda r: (r.label, int(r.key)))
    return rows
