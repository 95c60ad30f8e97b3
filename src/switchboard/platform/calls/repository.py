"""All SQL of outbound calls.

Request-side queries start from ``_scoped(tenant_id)``. The dispatcher, the watchdog and the
bridge callbacks act for the whole platform (a bridge event names a call, not a tenant); their
queries are the ``system_*`` functions below and never serve a tenant's request.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    Select,
    Table,
    any_,
    bindparam,
    case,
    delete,
    func,
    insert,
    select,
    true,
    update,
)
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from switchboard.kit.connections import GENERIC_PLANS
from switchboard.kit.db import Database
from switchboard.kit.paging import read_page_with_total
from switchboard.platform.calls.models import (
    DISPATCHING,
    RETRY_PENDING,
    SCHEDULED,
    Call,
    CallIdempotencyKey,
    InboundCall,
)
from switchboard.platform.routing.models import RoutingRevision
from switchboard.platform.whitelist.models import Whitelist
from switchboard.platform.whitelist.repository import STORED_COMMENTS, STORED_NUMBERS, Stored
from switchboard.tenants.models import Tenant


def _scoped(tenant_id: int) -> Select[Call]:
    return select(Call).where(Call.tenant_id == tenant_id)


async def get(session: AsyncSession, *, tenant_id: int, call_id: str) -> Call | None:
    stmt = _scoped(tenant_id).where(Call.call_id == call_id)
    return (await session.execute(stmt)).scalar_one_or_none()


# What a call record (spec 2.4) reads: a page selects these columns only, not the sealed
# prompt and key, the bridge's reply or the trunk list, which no record shows.
RECORD_COLUMNS = (
    Call.call_id, Call.requested_by, Call.phone, Call.display_name, Call.email, Call.voice,
    Call.language, Call.model, Call.status, Call.created_at, Call.scheduled_for,
    Call.dispatched_at, Call.answered_at, Call.ended_at, Call.ended_reason, Call.duration_sec,
    Call.trunk_id, Call.transcript_path, Call.error_detail, Call.sip_status, Call.attempt,
    Call.retries_left, Call.retry_delay_minutes,
)  # fmt: skip


def page(
    session: Session, *, tenant_id: int, statuses: Sequence[str], limit: int, offset: int
) -> tuple[list[tuple[Any, ...]], int]:
    """A page of call records' values (``RECORD_COLUMNS``, in order), newest first, and the
    total; a read for ``Database.read``."""
    stmt = select(*RECORD_COLUMNS).where(Call.tenant_id == tenant_id)
    if statuses:
        stmt = stmt.where(Call.status.in_(statuses))
    return read_page_with_total(session, stmt.order_by(Call.id.desc()), limit=limit, offset=offset)


def record_values(call: Call) -> tuple[Any, ...]:
    """A loaded call's values in ``RECORD_COLUMNS`` order."""
    return tuple(getattr(call, column.key) for column in RECORD_COLUMNS)


_TABLE = cast(Table, Call.__table__)
_INSERT = insert(_TABLE)
_COLUMNS = tuple(_TABLE.columns)


class Context(NamedTuple):
    """What placing a call reads of its tenant, as committed now."""

    tenant_name: str
    settings: dict[str, Any] | None  # as stored: ``TenantConfig.from_settings`` reads it
    whitelist: Stored | None  # the stored texts: ``whitelist.service.listed`` reads them
    outbound_revision: str  # "" before the outbound table's first change


_TENANTS = cast(Table, Tenant.__table__)
_WHITELISTS = cast(Table, Whitelist.__table__)
_REVISIONS = cast(Table, RoutingRevision.__table__)
# One statement, built once: the tenant, its whitelist and its routing revision (each tenant
# has at most one of the latter two) are read in one round trip on every POST /v1/calls.
_CONTEXT = (
    select(
        _TENANTS.c.name,
        _TENANTS.c.settings,
        _WHITELISTS.c.tenant_id,
        STORED_NUMBERS,
        STORED_COMMENTS,
        _REVISIONS.c.outbound,
    )
    .select_from(_TENANTS)
    .outerjoin(_WHITELISTS, _WHITELISTS.c.tenant_id == _TENANTS.c.id)
    .outerjoin(_REVISIONS, _REVISIONS.c.tenant_id == _TENANTS.c.id)
    .where(_TENANTS.c.id == bindparam("tenant_id"))
)


def context_now(session: Session, tenant_id: int) -> Context | None:
    """The tenant's name and settings, whitelist and outbound revision; None when there is
    no such tenant."""
    return _context(session.connection().execute(_CONTEXT, {"tenant_id": tenant_id}).first())


async def context(db: Database, tenant_id: int) -> Context | None:
    """``context_now`` as a read of its own (on PostgreSQL, on the driver: decision 0999)."""
    return _context(await db.first(_CONTEXT, {"tenant_id": tenant_id}))


def _context(row: Sequence[Any] | None) -> Context | None:
    if row is None:
        return None
    name, settings, listed, numbers, comments, revision = row
    lists = None if listed is None else Stored(numbers or "[]", comments or "{}")
    return Context(name, settings, lists, str(revision or ""))


def insert_now(session: Session, call: Call) -> None:
    """Insert a new (transient) call with one Core statement: the values it was given, the
    columns' defaults for the rest. Cheaper than the ORM's unit of work for a row nothing reads
    back (its ``id`` is not loaded)."""
    session.connection().execute(_INSERT, _values(call))


async def insert_one(db: Database, call: Call) -> None:
    """``insert_now`` as a write of its own (on PostgreSQL, on the driver: decision 0999)."""
    await db.insert(_INSERT, _values(call))


def _values(call: Call) -> dict[str, Any]:
    return {column.key: call.__dict__[column.key] for column in _COLUMNS
            if column.key in call.__dict__}  # fmt: skip


async def _rowcount(session: AsyncSession, stmt: Any) -> int:
    result = await session.execute(stmt, execution_options={"synchronize_session": False})
    assert isinstance(result, CursorResult)
    return int(result.rowcount)


async def guarded_update(
    session: AsyncSession, *, pk: int, where: Sequence[Any], values: dict[str, Any]
) -> bool:
    """Apply ``values`` only when every condition holds: the atomic guard of each transition
    (a duplicate or stale bridge event, a concurrent watchdog, matches nothing)."""
    stmt = update(Call).where(Call.id == pk, *where).values(**values)
    return await _rowcount(session, stmt) == 1


# System-wide queries (workers and bridge callbacks) ------------------------------------------


async def system_by_call_id(session: AsyncSession, call_id: str) -> Call | None:
    stmt = select(Call).where(Call.call_id == call_id).execution_options(populate_existing=True)
    return (await session.execute(stmt)).scalar_one_or_none()


async def system_by_pk(session: AsyncSession, pk: int) -> Call | None:
    stmt = select(Call).where(Call.id == pk).execution_options(populate_existing=True)
    return (await session.execute(stmt)).scalar_one_or_none()


async def system_by_pks(session: AsyncSession, pks: Sequence[int]) -> list[Call]:
    stmt = select(Call).where(Call.id.in_(pks)).execution_options(populate_existing=True)
    return list((await session.execute(stmt)).scalars())


async def tenant_name(session: AsyncSession, tenant_id: int) -> str:
    return str(
        (await session.execute(select(Tenant.name).where(Tenant.id == tenant_id))).scalar_one()
    )


async def tenant_by_id(session: AsyncSession, tenant_id: int) -> Tenant:
    return (await session.execute(select(Tenant).where(Tenant.id == tenant_id))).scalar_one()


async def tenant_by_name(session: AsyncSession, name: str) -> Tenant | None:
    return (await session.execute(select(Tenant).where(Tenant.name == name))).scalar_one_or_none()


# What the dispatcher claims, each queue with the time its calls fall due, found through its own
# index: dispatching calls whose lease expired (their dialler died), retries, scheduled calls.
CLAIM_QUEUES = (
    (DISPATCHING, Call.lease_until),
    (RETRY_PENDING, Call.due_at),
    (SCHEDULED, Call.due_at),
)


async def system_claim_due(
    session: AsyncSession, *, now: dt.datetime, owner: str, lease_until: dt.datetime, limit: int
) -> list[int]:
    """Claim up to ``limit`` calls to dial from the ``CLAIM_QUEUES``, each due call in the order
    it fell due. ``FOR UPDATE SKIP LOCKED`` on PostgreSQL lets several workers claim side by
    side, with the plans made without the values (``GENERIC_PLANS``); SQLite serialises writers
    anyway."""
    is_retry = Call.status == RETRY_PENDING
    postgres = session.get_bind().dialect.name == "postgresql"
    if postgres:
        await session.execute(GENERIC_PLANS)  # the index's order whatever the statistics
    claimed: list[int] = []
    for status, order in CLAIM_QUEUES:
        if len(claimed) >= limit:
            break
        due = (
            select(Call.id)
            .where(Call.status == status, order <= now)
            .order_by(order)
            .limit(limit - len(claimed))
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        # PostgreSQL: the due calls as one array, read once. As ``IN (subquery)`` it may plan a
        # semi join that runs the limited subquery again for every due call, each run adding
        # rows, until every due call is claimed at once (decision 0224). Locked as read, they
        # are still due when updated. SQLite reads ``IN (subquery)`` once, under the write lock.
        chosen = Call.id == any_(func.array(due)) if postgres else Call.id.in_(due)
        stmt = (
            update(Call)
            .where(chosen)
            .values(
                status=DISPATCHING,
                lease_owner=owner,
                lease_until=lease_until,
                attempt=case((is_retry, Call.attempt + 1), else_=Call.attempt),
                retries_left=case((is_retry, Call.retries_left - 1), else_=Call.retries_left),
                dispatched_at=case((is_retry, None), else_=Call.dispatched_at),
                answered_at=case((is_retry, None), else_=Call.answered_at),
                ai_started_at=case((is_retry, None), else_=Call.ai_started_at),
                transferred_at=case((is_retry, None), else_=Call.transferred_at),
                ended_at=case((is_retry, None), else_=Call.ended_at),
                ended_reason=case((is_retry, ""), else_=Call.ended_reason),
                outcome=case((is_retry, ""), else_=Call.outcome),
                duration_sec=case((is_retry, 0), else_=Call.duration_sec),
                error_detail=case((is_retry, ""), else_=Call.error_detail),
            )
            .returning(Call.id)
            .execution_options(synchronize_session=False)
        )
        claimed += [int(pk) for pk in (await session.execute(stmt)).scalars()]
    return claimed


def system_next_due(session: Session) -> dt.datetime | None:
    """When the first call of any ``CLAIM_QUEUES`` falls due (``None``: no call waits): a read
    of each queue's index head, so that an idle dispatcher neither writes nor scans."""
    heads = [
        select(column).where(Call.status == status).order_by(column).limit(1).scalar_subquery()
        for status, column in CLAIM_QUEUES
    ]
    times = session.execute(select(*heads)).one()
    return min((t for t in times if t is not None), default=None)


async def system_mark_dialled(
    session: AsyncSession, *, pks: Sequence[int], owner: str, attempt: int, values: dict[str, Any]
) -> list[int]:
    """Move claimed calls whose dial the bridge accepted to in-flight; a call cancelled or
    re-claimed meanwhile is left alone (and not returned)."""
    stmt = (
        update(Call)
        .where(
            Call.id.in_(pks),
            Call.status == DISPATCHING,
            Call.lease_owner == owner,
            Call.attempt == attempt,
        )
        .values(**values)
        .returning(Call.id)
        .execution_options(synchronize_session=False)
    )
    return [int(pk) for pk in (await session.execute(stmt)).scalars()]


async def system_extend_leases(
    session: AsyncSession, *, owner: str, lease_until: dt.datetime
) -> int:
    """Heartbeat: this process still holds the calls it dialled."""
    stmt = (
        update(Call)
        .where(Call.lease_owner == owner, Call.attempt_open == true())
        .values(lease_until=lease_until)
    )
    return await _rowcount(session, stmt)


async def system_orphaned(session: AsyncSession, *, now: dt.datetime, limit: int) -> list[int]:
    """Open attempts whose dialling process stopped renewing its lease."""
    stmt = (
        select(Call.id)
        .where(Call.attempt_open == true(), Call.lease_until <= now)
        .order_by(Call.lease_until)
        .limit(limit)
    )
    return [int(pk) for pk in (await session.execute(stmt)).scalars()]


async def system_overdue(session: AsyncSession, *, now: dt.datetime, limit: int) -> list[int]:
    stmt = (
        select(Call.id)
        .where(Call.attempt_open == true(), Call.deadline_at <= now)
        .order_by(Call.deadline_at)
        .limit(limit)
    )
    return [int(pk) for pk in (await session.execute(stmt)).scalars()]


# Inbound calls -------------------------------------------------------------------------------


async def system_inbound(session: AsyncSession, call_id: str) -> InboundCall | None:
    stmt = select(InboundCall).where(InboundCall.call_id == call_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def guarded_inbound_update(
    session: AsyncSession, *, pk: int, where: Sequence[Any], values: dict[str, Any]
) -> bool:
    stmt = update(InboundCall).where(InboundCall.id == pk, *where).values(**values)
    return await _rowcount(session, stmt) == 1


# Idempotency keys --------------------------------------------------------------------------


async def idempotency_key(
    session: AsyncSession, *, tenant_id: int, key: str
) -> CallIdempotencyKey | None:
    stmt = select(CallIdempotencyKey).where(
        CallIdempotencyKey.tenant_id == tenant_id, CallIdempotencyKey.key == key
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def delete_idempotency_key(session: AsyncSession, row: CallIdempotencyKey) -> None:
    await session.delete(row)
    await session.flush()


async def reserve_idempotency_key(session: AsyncSession, row: CallIdempotencyKey) -> bool:
    """Insert the key's row; False when another request holds the same key (its row commits
    first: PostgreSQL makes this insert wait for it, SQLite's writer lock serialises them)."""
    try:
        async with session.begin_nested():
            session.add(row)
            await session.flush()
    except IntegrityError:
        return False
    return True


async def system_purge_idempotency_keys(session: AsyncSession, *, now: dt.datetime) -> int:
    return await _rowcount(
        session, delete(CallIdempotencyKey).where(CallIdempotencyKey.expires_at <= now)
    )
