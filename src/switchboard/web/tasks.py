"""Background work: forgetting signed-out web app sessions once they have expired."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.runtime import purging_worker
from switchboard.web.models import EndedWebSession

# A signed-out session is kept a day past its expiry. The purging process's clock decides when
# the row goes, the serving process's clock when the cookie expires: were the purger's clock
# ahead, a copied cookie would otherwise be accepted again for the size of the skew.
KEEP_ENDED = dt.timedelta(days=1)


async def purge(session: AsyncSession, *, now: dt.datetime) -> int:
    """Delete the ended sessions a day past their expiry (their cookies are refused as expired
    by any clock less than a day behind ``now``)."""
    result = await session.execute(
        delete(EndedWebSession).where(EndedWebSession.expires_at <= now - KEEP_ENDED)
    )
    return int(getattr(result, "rowcount", 0))


purger = purging_worker(
    lambda session, now: purge(session, now=now),
    what="ended web app sessions",
    logger="switchboard.web",
)
