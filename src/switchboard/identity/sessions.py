"""A user's browser sessions at the identity provider, listed and ended one by one (decision
0605; Keycloak's "Sessions" tab). "Sign out everywhere" (``service.sign_out_everywhere``) ends
them all at once."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import BrowserSession, User
from switchboard.identity.service import get_user, revoke_session_tokens
from switchboard.kit.clock import Clock
from switchboard.kit.errors import NotFound


async def list_sessions(
    session: AsyncSession, *, tenant_id: int, username: str, clock: Clock
) -> list[BrowserSession]:
    """The user's live sessions (neither ended nor expired), newest first."""
    user = await get_user(session, tenant_id=tenant_id, username=username)
    stmt = (
        select(BrowserSession)
        .where(
            BrowserSession.tenant_id == tenant_id,
            BrowserSession.user_id == user.id,
            BrowserSession.ended_at.is_(None),
            BrowserSession.expires_at > clock.now(),
        )
        .order_by(BrowserSession.auth_time.desc(), BrowserSession.id.desc())
    )
    return list((await session.execute(stmt)).scalars())


async def end_session(
    session: AsyncSession, *, tenant_id: int, username: str, sid: str, clock: Clock
) -> tuple[User, BrowserSession]:
    """End one session of the user: the browser is asked for the password at its next sign-in,
    the web apps' sessions signed in through it are refused on their next request
    (``web.repository.session_user``) and the refresh tokens issued through it are revoked.
    Another user's or tenant's session is not found; ending one twice is no error."""
    user = await get_user(session, tenant_id=tenant_id, username=username)
    stmt = select(BrowserSession).where(
        BrowserSession.tenant_id == tenant_id,
        BrowserSession.user_id == user.id,
        BrowserSession.sid == sid,
    )
    found = (await session.execute(stmt)).scalar_one_or_none()
    if found is None:
        raise NotFound(f"no session {sid!r} of {username!r}")
    now = clock.now()
    if found.ended_at is None:
        found.ended_at = now
    await revoke_session_tokens(session, user_id=user.id, sid=sid, now=now)
    await session.flush()
    return user, found
