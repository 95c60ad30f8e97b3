"""Emitting events: one outbox row, in the caller's transaction (a rollback drops it)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.platform.events.catalogue import ALL_EVENTS
from switchboard.platform.events.models import Event


async def emit(
    session: AsyncSession,
    *,
    tenant_id: int,
    tenant_name: str,
    event: str,
    data: dict[str, Any],
    clock: Clock,
) -> Event:
    """Record ``event`` for ``tenant``; webhook deliveries are created from it."""
    if event not in ALL_EVENTS:
        raise ValueError(f"unknown event {event!r}")
    row = Event(tenant_id=tenant_id, name=event, payload=data, created_at=clock.now())
    session.add(row)
    await session.flush()
    return row
