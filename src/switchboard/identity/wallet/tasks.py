"""Background work: forgetting wallet sign-in requests that can complete no more."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.identity.wallet.models import PresentationRequest
from switchboard.identity.wallet.service import REQUEST_TTL
from switchboard.runtime import Runtime

log = logging.getLogger("switchboard.identity")

PURGE_EVERY_SECONDS = 3600.0


async def purge(session: AsyncSession, *, now: dt.datetime) -> int:
    """Delete requests a request's lifetime past their expiry: no wallet may answer them, and a
    browser still waiting has been shown the end long since."""
    cutoff = now - REQUEST_TTL
    stmt = delete(PresentationRequest).where(PresentationRequest.expires_at < cutoff)
    result = await session.execute(stmt)
    return int(getattr(result, "rowcount", 0))


async def purger(runtime: Runtime, stop: asyncio.Event) -> None:
    """Worker: purge once an hour until stopped."""
    while not stop.is_set():
        try:
            async with runtime.db.transaction() as session:
                count = await purge(session, now=runtime.clock.now())
            if count:
                log.info("purged %d wallet sign-in requests", count)
        except Exception:
            log.exception("wallet sign-in purge failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=PURGE_EVERY_SECONDS)
