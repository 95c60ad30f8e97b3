"""All SQL of outcome emails. The sender's statements are cross-tenant (it serves every
tenant's outbox); ``log_for_call`` is the tenant-scoped read."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.platform.emails.models import PENDING, OutcomeEmail, OutcomeEmailAttempt


def add(session: AsyncSession, row: OutcomeEmail) -> None:
    session.add(row)


async def emails_for_call(
    session: AsyncSession, *, tenant_id: int, call_id: str
) -> list[OutcomeEmail]:
    stmt = (
        select(OutcomeEmail)
        .where(OutcomeEmail.tenant_id == tenant_id, OutcomeEmail.call_id == call_id)
        .order_by(OutcomeEmail.created_at, OutcomeEmail.attempt)
    )
    return list(await session.scalars(stmt))


async def attempts_of(
    session: AsyncSession, *, tenant_id: int, email_ids: Sequence[str]
) -> list[OutcomeEmailAttempt]:
    if not email_ids:
        return []
    stmt = (
        select(OutcomeEmailAttempt)
        .where(
            OutcomeEmailAttempt.tenant_id == tenant_id,
            OutcomeEmailAttempt.email_id.in_(list(email_ids)),
        )
        .order_by(OutcomeEmailAttempt.id)
    )
    return list(await session.scalars(stmt))


async def system_claim(
    session: AsyncSession,
    *,
    now: dt.datetime,
    until: dt.datetime,
    token: str,
    limit: int,
    skip_locked: bool,
) -> list[OutcomeEmail]:
    """Lease due, unleased emails (a conditional UPDATE: one winner per row)."""
    due = (
        select(OutcomeEmail.id)
        .where(
            OutcomeEmail.status == PENDING,
            OutcomeEmail.next_attempt_at <= now,
            or_(OutcomeEmail.lease_until.is_(None), OutcomeEmail.lease_until < now),
        )
        .order_by(OutcomeEmail.next_attempt_at)
        .limit(limit)
    )
    if skip_locked:
        due = due.with_for_update(skip_locked=True)
    ids = list(await session.scalars(due))
    if not ids:
        return []
    won = list(
        await session.scalars(
            update(OutcomeEmail)
            .where(
                OutcomeEmail.id.in_(ids),
                OutcomeEmail.status == PENDING,
                or_(OutcomeEmail.lease_until.is_(None), OutcomeEmail.lease_until < now),
            )
            .values(lease_token=token, lease_until=until)
            .returning(OutcomeEmail.id)
        )
    )
    if not won:
        return []
    rows = await session.scalars(
        select(OutcomeEmail)
        .where(OutcomeEmail.id.in_(won))
        .order_by(OutcomeEmail.next_attempt_at, OutcomeEmail.created_at)
        .execution_options(populate_existing=True)
    )
    return list(rows)


async def system_finish(
    session: AsyncSession,
    *,
    email_id: str,
    token: str,
    values: dict[str, object],
    attempt: OutcomeEmailAttempt,
) -> bool:
    """Record one try's outcome, only while this sender still holds the lease."""
    result = await session.execute(
        update(OutcomeEmail)
        .where(OutcomeEmail.id == email_id, OutcomeEmail.lease_token == token)
        .values(lease_token=None, lease_until=None, **values)
        .execution_options(synchronize_session=False)
    )
    if not getattr(result, "rowcount", 0):
        return False
    session.add(attempt)
    await session.flush()
    return True
