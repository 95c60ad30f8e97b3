"""Background work: forgetting authorization codes, browser sessions, the tallies of device
cookies (decision 0031) and those of unknown usernames (decision 0006) that can serve no more.

A used or expired code is kept for ``KEEP_CODES`` after its expiry, so a replay in that time is
still recognised (and revokes what the code issued); later it is simply unknown.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import delete, or_
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import (
    AuthorizationCode,
    BrowserSession,
    DeviceFailures,
    UnknownUserFailures,
)
from switchboard.identity.lockout import FORGET_AFTER
from switchboard.runtime import purging_worker

KEEP_CODES = dt.timedelta(days=1)


async def purge(session: AsyncSession, *, now: dt.datetime) -> tuple[int, int, int, int]:
    """Delete codes a day past expiry, sessions that expired or ended, the tallies of device
    cookies that expired and those of unknown usernames quiet for ``FORGET_AFTER`` (their lock,
    if any, long over: the next failure would start them again anyway); the counts."""
    codes = await session.execute(
        delete(AuthorizationCode).where(AuthorizationCode.expires_at < now - KEEP_CODES)
    )
    sessions = await session.execute(
        delete(BrowserSession).where(
            or_(BrowserSession.expires_at < now, BrowserSession.ended_at.is_not(None))
        )
    )
    devices = await session.execute(delete(DeviceFailures).where(DeviceFailures.expires_at < now))
    unknown = await session.execute(
        delete(UnknownUserFailures).where(UnknownUserFailures.failed_at < now - FORGET_AFTER)
    )
    return (
        getattr(codes, "rowcount", 0),
        getattr(sessions, "rowcount", 0),
        getattr(devices, "rowcount", 0),
        getattr(unknown, "rowcount", 0),
    )


async def _purge_count(session: AsyncSession, now: dt.datetime) -> int:
    return sum(await purge(session, now=now))


purger = purging_worker(
    _purge_count,
    what="authorization codes, IdP sessions and the tallies of devices and unknown usernames",
    logger="switchboard.identity",
)
