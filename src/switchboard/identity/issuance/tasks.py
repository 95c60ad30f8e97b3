"""Background work: forgetting credential offers and c_nonces that can serve no more."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.identity.issuance.models import CredentialNonce, CredentialOffer
from switchboard.runtime import purging_worker

# An offer is kept a day past its expiry, so a replayed pre-authorized code is still recognised
# (and revokes the token the first use issued) while any token it issued has long expired.
KEEP_OFFERS = dt.timedelta(days=1)


async def purge(session: AsyncSession, *, now: dt.datetime) -> tuple[int, int]:
    """Delete offers a day past expiry and expired c_nonces; the counts."""
    offers = await session.execute(
        delete(CredentialOffer).where(CredentialOffer.expires_at < now - KEEP_OFFERS)
    )
    nonces = await session.execute(delete(CredentialNonce).where(CredentialNonce.expires_at <= now))
    return getattr(offers, "rowcount", 0), getattr(nonces, "rowcount", 0)


async def _purge_count(session: AsyncSession, now: dt.datetime) -> int:
    return sum(await purge(session, now=now))


purger = purging_worker(
    _purge_count, what="credential offers and nonces", logger="switchboard.identity"
)
