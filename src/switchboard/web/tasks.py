"""Background work: forgetting signed-out web app sessions once they have expired, and results
to show once (decision 0602) that were never shown."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.runtime import purging_worker
from switchboard.web.models import EndedWebSession, PendingFlash

# A signed-out session is kept a day past its expiry. The purging process's clock decides when
# the row goes, the serving process's clock when the cookie expires: were the purger's clock
# ahead, a copied cookie would otherwise be accepted again for the size of the skew.
KEEP_ENDED = dt.timedelta(days=1)


async def purge(session: AsyncSession, *, now: dt.datetime) -> tuple[int, int]:
    """Delete the ended sessions a day past their expiry (their cookies are refused as expired
    by any clock less than a day behind ``now``) and the flashes that expired unread (a purger
    ahead of the serving clock only takes one a little early); the counts."""
    ended = await session.execute(
        delete(EndedWebSession).where(EndedWebSession.expires_at <= now - KEEP_ENDED)
    )
    flashes = await session.execute(delete(PendingFlash).where(PendingFlash.expires_at <= now))
    return int(getattr(ended, "rowcount", 0)), int(getattr(flashes, "rowcount", 0))


async def _purge_count(session: AsyncSession, now: dt.datetime) -> int:
    return sum(await purge(session, now=now))


purger = purging_worker(
    _purge_count,
    what="ended web app sessions and unread flashes",
    logger="switchboard.web",
)
