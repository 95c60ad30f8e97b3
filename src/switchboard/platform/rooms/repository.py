"""Every query on rooms, scoped to one tenant."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.platform.rooms.models import Room


def _scoped(tenant_id: int) -> Select[Room]:
    return select(Room).where(Room.tenant_id == tenant_id)


async def find(session: AsyncSession, *, tenant_id: int, name: str) -> Room | None:
    stmt = _scoped(tenant_id).where(Room.name == name)
    return (await session.execute(stmt)).scalar_one_or_none()


async def get_or_create(
    session: AsyncSession, *, tenant_id: int, name: str, now: dt.datetime
) -> Room:
    row = await find(session, tenant_id=tenant_id, name=name)
    if row is None:
        row = Room(tenant_id=tenant_id, name=name, mode="mesh", lobby=False, updated_at=now)
        session.add(row)
        await session.flush()
    return row


async def list_rooms(session: AsyncSession, *, tenant_id: int) -> Sequence[Room]:
    stmt = _scoped(tenant_id).order_by(Room.name)
    return (await session.execute(stmt)).scalars().all()
