"""The tenant-facing SQL of webhooks: every read starts from ``_subscriptions`` /
``_deliveries`` / ``_attempts``, each scoped to one tenant.

The sender's claim, completion and pruning statements, the only cross-tenant ones, are in
``queue.py``: they serve every tenant's outbox and never reach an API caller.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Select,
    func,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.platform.webhooks.models import (
    FAILED,
    PENDING,
    Attempt,
    Delivery,
    Subscription,
    status_is,
)


def _subscriptions(tenant_id: int) -> Select[Subscription]:
    return select(Subscription).where(Subscription.tenant_id == tenant_id)


def _deliveries(tenant_id: int) -> Select[Delivery]:
    return select(Delivery).where(Delivery.tenant_id == tenant_id)


def _attempts(tenant_id: int) -> Select[Attempt]:
    return select(Attempt).where(Attempt.tenant_id == tenant_id)


async def page_subscriptions(
    session: AsyncSession, tenant_id: int, *, limit: int, offset: int
) -> tuple[list[Subscription], int]:
    base = _subscriptions(tenant_id)
    total = await session.scalar(select(func.count()).select_from(base.subquery()))
    rows = await session.scalars(
        base.order_by(Subscription.created_at, Subscription.id).limit(limit).offset(offset)
    )
    return list(rows), int(total or 0)


async def get_subscription(
    session: AsyncSession, tenant_id: int, subscription_id: str
) -> Subscription | None:
    stmt = _subscriptions(tenant_id).where(Subscription.id == subscription_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def active_subscriptions(session: AsyncSession, tenant_id: int) -> list[Subscription]:
    stmt = _subscriptions(tenant_id).where(Subscription.active.is_(True))
    return list(await session.scalars(stmt))


async def get_delivery(session: AsyncSession, tenant_id: int, delivery_id: str) -> Delivery | None:
    stmt = _deliveries(tenant_id).where(Delivery.id == delivery_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def pending_among(
    session: AsyncSession, tenant_id: int, delivery_ids: Sequence[str]
) -> set[str]:
    """Which of ``delivery_ids`` are still queued or retrying."""
    if not delivery_ids:
        return set()
    stmt = select(Delivery.id).where(
        Delivery.tenant_id == tenant_id,
        Delivery.id.in_(list(dict.fromkeys(delivery_ids))),
        Delivery.status == PENDING,
    )
    return set(await session.scalars(stmt))


async def page_attempts(
    session: AsyncSession, tenant_id: int, subscription_id: str, *, limit: int, offset: int
) -> list[Attempt]:
    stmt = (
        _attempts(tenant_id)
        .where(Attempt.subscription_id == subscription_id)
        .order_by(Attempt.id.desc())
        .limit(limit)
        .offset(offset)
    )
    return list(await session.scalars(stmt))


async def requeue_failed_since(
    session: AsyncSession,
    tenant_id: int,
    *,
    since: dt.datetime,
    subscription_ids: Sequence[str],
    now: dt.datetime,
) -> int:
    """Put every failed delivery created at or after ``since`` back in the queue."""
    ids = select(Delivery.id).where(
        Delivery.tenant_id == tenant_id,
        status_is(Delivery.status, FAILED),
        Delivery.created_at >= since,
        Delivery.subscription_id.in_(list(subscription_ids)),
    )
    stmt = (
        update(Delivery)
        .where(Delivery.id.in_(ids.scalar_subquery()))
        .values(**_requeue_values(now))
        .execution_options(synchronize_session=False)
    )
    result = await session.execute(stmt)
    return int(getattr(result, "rowcount", 0) or 0)


def _requeue_values(now: dt.datetime) -> dict[str, Any]:
    return {
        "status": PENDING,
        "attempts": 0,
        "next_attempt_at": now,
        "lease_token": None,
        "lease_until": None,
        "completed_at": None,
    }


async def requeue(session: AsyncSession, delivery: Delivery, *, now: dt.datetime) -> None:
    for key, value in _requeue_values(now).items():
        setattr(delivery, key, value)
    await session.flush()
