"""A user's end of life: disabling and deleting a user reach what the rest of the provider
issued to it, its refresh tokens, API keys and staff credentials.

It sits above both the users' rules (``service.py``) and the staff credentials (``issuance/``),
which are built on the users, so neither of those imports the other."""

from __future__ import annotations

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.keycache import REVOCATIONS
from switchboard.auth.models import ApiKey, RefreshToken, User
from switchboard.identity.issuance import status as credential_status
from switchboard.identity.service import get_user, revoke_refresh_tokens
from switchboard.kit.clock import Clock


async def set_disabled(
    session: AsyncSession, *, tenant_id: int, username: str, disabled: bool, clock: Clock
) -> User:
    """Disable (or enable) a user: its tokens and API keys stop working on their next use, and
    its staff credentials are revoked for good (enabling it again does not restore them)."""
    user = await get_user(session, tenant_id=tenant_id, username=username)
    user.disabled = disabled
    if disabled:
        await revoke_refresh_tokens(session, user, clock)
        REVOCATIONS.after_commit_of(session)
        await credential_status.revoke_user(
            session, tenant_id=tenant_id, user_id=user.id, reason="user disabled", now=clock.now()
        )
    await session.flush()
    return user


async def delete_user(
    session: AsyncSession, *, tenant_id: int, username: str, clock: Clock
) -> None:
    """Delete a user with its API keys and refresh tokens; its access tokens stop working and
    its staff credentials are revoked."""
    user = await get_user(session, tenant_id=tenant_id, username=username)
    await credential_status.revoke_user(
        session, tenant_id=tenant_id, user_id=user.id, reason="user deleted", now=clock.now()
    )
    await session.execute(delete(ApiKey).where(ApiKey.user_id == user.id))
    REVOCATIONS.after_commit_of(session)
    await session.execute(delete(RefreshToken).where(RefreshToken.user_id == user.id))
    await session.delete(user)
    await session.flush()
