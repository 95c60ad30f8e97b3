"""Emitting events: one outbox row, in the caller's transaction (a rollback drops it).

The same transaction fans the event out to one webhook delivery per active subscription
that wants it, so a committed change always has its deliveries and a rolled-back one none
(decision 0201). It lives with the webhooks, not with ``platform/events``: the deliveries are
what the row is written for, and ``events`` (the catalogue, the row, its reads) stays below the
webhooks, which read it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.platform.events.models import Event
from switchboard.platform.events.payloads import check
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
    sender picks them up once the caller's transaction commits).

    ``data`` must be exactly the catalogue's payload of ``event`` (``events.payloads``): a
    mismatch raises ``PayloadMismatch`` and writes nothing (decision 0215)."""
    check(event, data)
    row = Event(tenant_id=tenant_id, name=event, payload=data, created_at=clock.now())
    session.add(row)
    await session.flush()
    await webhooks.fan_out(session, event=row, tenant_name=tenant_name)
    return row
