"""All SQL of the whitelist; every query is scoped to one tenant."""

from __future__ import annotations

from typing import NamedTuple, cast

from sqlalchemy import CursorResult, Select, Table, Text, bindparam, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session as SyncSession

from switchboard.platform.whitelist.models import Whitelist


class Lists(NamedTuple):
    """A whitelist's values as stored."""

    numbers: list[str]
    comments: dict[str, str]


class Stored(NamedTuple):
    """A whitelist as its stored JSON texts: one string each to hash and compare, so what is
    derived from a list can be kept until the list changes (``service.listed``)."""

    numbers: str
    comments: str


def _of(tenant_id: int) -> Select[Whitelist]:
    return select(Whitelist).where(Whitelist.tenant_id == tenant_id)


# Built once, Core: the lists are read on every POST /v1/calls (a statement made per call
# costs more than the lookup), and no ORM row is needed to read them.
_WHITELISTS = cast(Table, Whitelist.__table__)
_LISTS = select(_WHITELISTS.c.numbers, _WHITELISTS.c.comments).where(
    _WHITELISTS.c.tenant_id == bindparam("tenant_id")
)


# The lists as the JSON texts they are stored as (PostgreSQL's ``json`` keeps the text as
# written; SQLite stores text), for the membership check of every POST /v1/calls.
STORED_NUMBERS = _WHITELISTS.c.numbers.cast(Text)
STORED_COMMENTS = _WHITELISTS.c.comments.cast(Text)
_STORED = select(STORED_NUMBERS, STORED_COMMENTS).where(
    _WHITELISTS.c.tenant_id == bindparam("tenant_id")
)


def stored_now(session: SyncSession, tenant_id: int) -> Stored | None:
    """The tenant's lists as stored texts; None when it has none."""
    row = session.connection().execute(_STORED, {"tenant_id": tenant_id}).first()
    return None if row is None else Stored(row[0] or "[]", row[1] or "{}")


def read_now(session: SyncSession, tenant_id: int) -> Lists | None:
    """The tenant's number list and comments as committed now; None when it has none."""
    row = session.connection().execute(_LISTS, {"tenant_id": tenant_id}).first()
    return None if row is None else Lists(row[0] or [], row[1] or {})


async def read(session: AsyncSession, tenant_id: int) -> Lists | None:
    return await session.run_sync(read_now, tenant_id)


def lock_now(session: SyncSession, tenant_id: int) -> Whitelist:
    """The tenant's whitelist, write-locked until the transaction ends (created empty when the
    tenant has none yet).

    The lock is taken by writing the row before reading it: a row lock on PostgreSQL, the
    database write lock on SQLite (whose driver starts the transaction at the first write, so
    ``SELECT ... FOR UPDATE`` alone would not stop a lost update there).
    """
    touch = (
        update(Whitelist)
        .where(Whitelist.tenant_id == tenant_id)
        .values(tenant_id=Whitelist.tenant_id)
        .execution_options(synchronize_session=False)
    )
    result: CursorResult[tuple[()]] = session.execute(touch)  # type: ignore[assignment]
    if not result.rowcount:
        try:
            with session.begin_nested():
                session.add(Whitelist(tenant_id=tenant_id, numbers=[], comments={}))
        except IntegrityError:  # created by a concurrent writer: wait for its lock
            session.execute(touch)
    stmt = _of(tenant_id).execution_options(populate_existing=True)
    return session.execute(stmt).scalar_one()


async def lock(session: AsyncSession, tenant_id: int) -> Whitelist:
    """``lock_now`` in an asynchronous session."""
    return await session.run_sync(lock_now, tenant_id)


def store_now(
    session: SyncSession,
    row: Whitelist,
    *,
    numbers: list[str],
    comments: dict[str, str],
) -> None:
    row.numbers = numbers
    row.comments = comments
    session.flush()


async def store(
    session: AsyncSession,
    row: Whitelist,
    *,
    numbers: list[str],
    comments: dict[str, str],
) -> None:
    await session.run_sync(lambda sync: store_now(sync, row, numbers=numbers, comments=comments))
