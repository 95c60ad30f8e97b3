"""Background work: forgetting federated sign-ins that can complete no more."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.identity.federation.models import ExternalLogin
from switchboard.runtime import Runtime

log = logging.getLogger("switchboard.identity")

PURGE_EVERY_SECONDS = 3600.0


async def purge(session: AsyncSession, *, now: dt.datetime) -> int:
    """Delete sign-ins past their expiry (used or not: a late answer is refused either way)."""
    result = await session.execute(delete(ExternalLogin).where(ExternalLogin.expires_at < now))
    return int(getattr(result, "rowcount", 0))


async def purger(runtime: Runtime, stop: asyncio.Event) -> None:
    """Worker: purge once an hour until stopped."""
    while not stop.is_set():
        try:
            async with runtime.db.transaction() as session:
                count = await purge(session, now=runtime.clock.now())
            if count:
                log.info("purged %d federated sign-ins", count)
        except Exception:
            log.exception("federated sign-in purge failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=PURGE_EVERY_SECONDS)
