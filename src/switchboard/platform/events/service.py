"""Emitting events: one outbox row, in the caller's transaction (a rollback drops it).

The same transaction fans the event out to one webhook delivery per active subscription
that wants it, so a committed change always has its deliveries and a rolled-back one none.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.platform.events.catalogue import ALL_EVENTS
from switchboard.platform.events.models import Event
from switchboard.platform.webhooks import service as webhooks


async def emit(
    session: AsyncSession,
    *,
    tenant_id: int,
    tenant_name: str,
    event: str,
    data: dict[str, Any],
    clock: Clock,
) -> Event:
    """Record ``event`` for the tenant and queue its webhook deliveries (not yet sent: the
    sender picks them up once the caller's transaction commits)."""
    if event not in ALL_EVENTS:
        raise ValueError(f"unknown event {event!r}")
    row = Event(tenant_id=tenant_id, name=event, payload=data, created_at=clock.now())
    session.add(row)
    await session.flush()
    await webhooks.fan_out(session, event=row, tenant_name=tenant_name)
    return row


CALL_EVENTS_SCAN = 2000


async def events_of_call(
    session: AsyncSession, *, tenant_id: int, call_id: str, since: dt.datetime
) -> list[Event]:
    """The tenant's events whose payload names ``call_id``, oldest first (the call's story).

    The payload is JSON on SQLite and JSONB on PostgreSQL, so the match is made here over the
    tenant's events since the call was created, a bounded scan."""
    stmt = (
        select(Event)
        .where(Event.tenant_id == tenant_id, Event.created_at >= since)
        .order_by(Event.id)
        .limit(CALL_EVENTS_SCAN)
    )
    rows = (await session.execute(stmt)).scalars().all()
    return [row for row in rows if row.payload.get("callId") == call_id]
