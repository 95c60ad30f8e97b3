"""The web apps' sessions on the server side: only the ended ones are kept (decision 0603), and
the identity provider's session each came from is looked up (decision 0605)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import exists, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import BrowserSession, User
from switchboard.web.cookies import WebSession
from switchboard.web.models import EndedWebSession


async def session_user(
    session: AsyncSession, found: WebSession, *, now: dt.datetime
) -> User | None:
    """The user of a session cookie when the session still holds: not signed out, the user
    enabled, of the session's tenant and with the password and security stamp it signed in
    with (decision 0604), and the identity provider's session it came from still live, neither
    ended (an admin ended it, the browser signed out there or signed in anew) nor expired
    (decision 0605). The provider's session is read in the same statement as the user, by its
    unique ``sid``."""
    if await session.get(EndedWebSession, found.sid) is not None:
        return None
    live = exists().where(
        BrowserSession.sid == found.idp_sid,
        BrowserSession.user_id == User.id,
        BrowserSession.ended_at.is_(None),
        BrowserSession.expires_at > now,
    )
    stmt = select(User).where(User.id == found.user_id, live)
    user = (await session.execute(stmt)).scalar_one_or_none()
    return user if user is not None and found.still_holds(user) else None


async def end_session(session: AsyncSession, found: WebSession) -> None:
    """Record ``found`` as signed out until its expiry; ending it twice is no error."""
    values = {"sid": found.sid, "expires_at": dt.datetime.fromtimestamp(found.expires, dt.UTC)}
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    await session.execute(insert(EndedWebSession).values(values).on_conflict_do_nothing())
