"""Background work: forgetting federated sign-ins that can complete no more."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.identity.federation.models import ExternalLogin
from switchboard.runtime import purging_worker


async def purge(session: AsyncSession, *, now: dt.datetime) -> int:
    """Delete sign-ins past their expiry (used or not: a late answer is refused either way)."""
    result = await session.execute(delete(ExternalLogin).where(ExternalLogin.expires_at < now))
    return int(getattr(result, "rowcount", 0))


purger = purging_worker(
    lambda session, now: purge(session, now=now),
    what="federated sign-ins",
    logger="switchboard.identity",
)
