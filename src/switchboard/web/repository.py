"""The web apps' sessions on the server side: only the ended ones are kept (decision 0603)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import User
from switchboard.web.cookies import WebSession
from switchboard.web.models import EndedWebSession


async def session_user(session: AsyncSession, found: WebSession) -> User | None:
    """The user of a session cookie when the session still holds: not signed out, the user
    enabled, of the session's tenant and with the password and security stamp it signed in
    with (decision 0604)."""
    if await session.get(EndedWebSession, found.sid) is not None:
        return None
    user = await session.get(User, found.user_id)
    return user if user is not None and found.still_holds(user) else None


async def end_session(session: AsyncSession, found: WebSession) -> None:
    """Record ``found`` as signed out until its expiry; ending it twice is no error."""
    values = {"sid": found.sid, "expires_at": dt.datetime.fromtimestamp(found.expires, dt.UTC)}
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    await session.execute(insert(EndedWebSession).values(values).on_conflict_do_nothing())
