"""Reading the emitted events back: a call's story, for the console's call page.

Emitting one is ``webhooks.outbox.emit``, which writes the row together with its deliveries.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.platform.events.models import Event

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
