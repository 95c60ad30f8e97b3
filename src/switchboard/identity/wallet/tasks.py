"""Background work: forgetting wallet sign-in requests that can complete no more."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.identity.wallet.models import PresentationRequest
from switchboard.identity.wallet.service import REQUEST_TTL
from switchboard.runtime import purging_worker


async def purge(session: AsyncSession, *, now: dt.datetime) -> int:
    """Delete requests a request's lifetime past their expiry: no wallet may answer them, and a
    browser still waiting has been shown the end long since."""
    cutoff = now - REQUEST_TTL
    stmt = delete(PresentationRequest).where(PresentationRequest.expires_at < cutoff)
    result = await session.execute(stmt)
    return int(getattr(result, "rowcount", 0))


purger = purging_worker(
    lambda session, now: purge(session, now=now),
    what="wallet sign-in requests",
    logger="switchboard.identity",
)
