"""Background work: forgetting authorization codes and browser sessions that can serve no more.

A used or expired code is kept for ``KEEP_CODES`` after its expiry, so a replay in that time is
still recognised (and revokes what the code issued); later it is simply unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging

from sqlalchemy import delete, or_
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.identity.models import AuthorizationCode, BrowserSession
from switchboard.runtime import Runtime

log = logging.getLogger("switchboard.identity")

KEEP_CODES = dt.timedelta(days=1)
PURGE_EVERY_SECONDS = 3600.0


async def purge(session: AsyncSession, *, now: dt.datetime) -> tuple[int, int]:
    """Delete codes a day past expiry and sessions that expired or ended; the counts."""
    codes = await session.execute(
        delete(AuthorizationCode).where(AuthorizationCode.expires_at < now - KEEP_CODES)
    )
    sessions = await session.execute(
        delete(BrowserSession).where(
            or_(BrowserSession.expires_at < now, BrowserSession.ended_at.is_not(None))
        )
    )
    return getattr(codes, "rowcount", 0), getattr(sessions, "rowcount", 0)


async def purger(runtime: Runtime, stop: asyncio.Event) -> None:
    """Worker: purge once an hour until stopped."""
    while not stop.is_set():
        try:
            async with runtime.db.transaction() as session:
                codes, sessions = await purge(session, now=runtime.clock.now())
            if codes or sessions:
                log.info("purged %d authorization codes and %d IdP sessions", codes, sessions)
        except Exception:
            log.exception("sign-in purge failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=PURGE_EVERY_SECONDS)
