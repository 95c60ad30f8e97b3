"""Every query on rooms, scoped to one tenant."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import Select, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.platform.rooms.models import Room, RoomPeer


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


# --- the peers of every process (only when rooms fan out, decision 0841) --------------------


def _members(tenant_id: int, room_id: int) -> Select[RoomPeer]:
    return select(RoomPeer).where(RoomPeer.tenant_id == tenant_id, RoomPeer.room_id == room_id)


async def members(session: AsyncSession, *, room: Room) -> Sequence[RoomPeer]:
    stmt = _members(room.tenant_id, room.id).order_by(RoomPeer.id)
    return (await session.execute(stmt)).scalars().all()


async def add_member(session: AsyncSession, *, room: Room, member: RoomPeer) -> None:
    member.tenant_id, member.room_id = room.tenant_id, room.id
    session.add(member)
    await session.flush()


async def remove_members(session: AsyncSession, *, room: Room, peer_ids: list[str]) -> None:
    await session.execute(
        delete(RoomPeer).where(
            RoomPeer.tenant_id == room.tenant_id, RoomPeer.room_id == room.id,
            RoomPeer.peer_id.in_(peer_ids),
        )
    )  # fmt: skip


async def set_pref(session: AsyncSession, *, room: Room, peer_id: str, pref: str) -> None:
    stmt = _members(room.tenant_id, room.id).where(RoomPeer.peer_id == peer_id)
    found = (await session.execute(stmt)).scalar_one_or_none()
    if found is not None:
        found.pref = pref


async def counts(session: AsyncSession, *, room: Room) -> tuple[int, int]:
    """(peers, humans) of the room over every process."""
    humans = func.count().filter(RoomPeer.role == "human")
    stmt = select(func.count(), humans).where(
        RoomPeer.tenant_id == room.tenant_id, RoomPeer.room_id == room.id
    )
    peers, human_count = (await session.execute(stmt)).one()
    return int(peers), int(human_count)
