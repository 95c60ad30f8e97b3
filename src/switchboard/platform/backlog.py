"""The platform's backlog as `/metrics` reports it: calls and webhook deliveries by status, the
failed attempts, and how long the oldest due delivery and call have waited (``ops.metrics``
turns it into gauges at scrape time, so every process reports the same figures)."""

from __future__ import annotations

from sqlalchemy import func, select

from switchboard.ops.metrics import Backlog
from switchboard.platform.calls.models import RETRY_PENDING, SCHEDULED, Call
from switchboard.platform.webhooks.models import PENDING, Attempt, Delivery, status_is
from switchboard.runtime import Runtime


async def read_backlog(runtime: Runtime) -> Backlog:
    now = runtime.clock.now()
    async with runtime.db.transaction(read_only=True) as session:
        calls = (
            await session.execute(select(Call.status, func.count()).group_by(Call.status))
        ).all()
        deliveries = (
            await session.execute(select(Delivery.status, func.count()).group_by(Delivery.status))
        ).all()
        failures = await session.scalar(
            select(func.count())
            .select_from(Attempt)
            .where((Attempt.status_code.is_(None)) | (Attempt.status_code >= 300))
        )
        oldest_delivery = await session.scalar(
            select(func.min(Delivery.next_attempt_at)).where(
                status_is(Delivery.status, PENDING), Delivery.next_attempt_at <= now
            )
        )
        oldest_call = await session.scalar(
            select(func.min(Call.due_at)).where(
                Call.status.in_((SCHEDULED, RETRY_PENDING)), Call.due_at <= now
            )
        )
    return Backlog(
        calls=[(str(status), int(count)) for status, count in calls],
        deliveries=[(str(status), int(count)) for status, count in deliveries],
        delivery_failures=int(failures or 0),
        oldest_delivery=oldest_delivery,
        oldest_call=oldest_call,
    )
