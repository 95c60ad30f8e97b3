"""Background work: forgetting signed-out web app sessions once they have expired."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.runtime import purging_worker
from switchboard.web.models import EndedWebSession


async def purge(session: AsyncSession, *, now: dt.datetime) -> int:
    """Delete the ended sessions past their expiry (their cookies are refused as expired)."""
    result = await session.execute(delete(EndedWebSession).where(EndedWebSession.expires_at <= now))
    return int(getattr(result, "rowcount", 0))


purger = purging_worker(
    lambda session, now: purge(session, now=now),
    what="ended web app sessions",
    logger="switchboard.web",
)
