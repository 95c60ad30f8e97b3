"""Every query of federation, starting from one tenant-scoped statement per table."""

from __future__ import annotations

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import User
from switchboard.identity.federation.models import ExternalIdentity, ExternalLogin, ExternalProvider


def _providers(tenant_id: int) -> Select[ExternalProvider]:
    return select(ExternalProvider).where(ExternalProvider.tenant_id == tenant_id)


async def list_providers(
    session: AsyncSession, *, tenant_id: int, enabled_only: bool = False
) -> list[ExternalProvider]:
    stmt = _providers(tenant_id).order_by(ExternalProvider.name)
    if enabled_only:
        stmt = stmt.where(ExternalProvider.enabled.is_(True))
    return list((await session.execute(stmt)).scalars())


async def find_provider(
    session: AsyncSession, *, tenant_id: int, name: str
) -> ExternalProvider | None:
    stmt = _providers(tenant_id).where(ExternalProvider.name == name)
    return (await session.execute(stmt)).scalar_one_or_none()


async def find_login(
    session: AsyncSession, *, tenant_id: int, provider_id: int, state_hash: str
) -> ExternalLogin | None:
    stmt = select(ExternalLogin).where(
        ExternalLogin.tenant_id == tenant_id,
        ExternalLogin.provider_id == provider_id,
        ExternalLogin.state_hash == state_hash,
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def find_linked_user(
    session: AsyncSession, *, tenant_id: int, provider_id: int, subject: str
) -> User | None:
    stmt = (
        select(User)
        .join(ExternalIdentity, ExternalIdentity.user_id == User.id)
        .where(
            ExternalIdentity.tenant_id == tenant_id,
            User.tenant_id == tenant_id,
            ExternalIdentity.provider_id == provider_id,
            ExternalIdentity.subject == subject,
        )
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def find_user_by_verified_email(
    session: AsyncSession, *, tenant_id: int, email: str
) -> list[User]:
    stmt = select(User).where(
        User.tenant_id == tenant_id,
        func.lower(User.email) == email.lower(),
        User.email_verified.is_(True),
    )
    return list((await session.execute(stmt)).scalars())


async def find_user_by_username(
    session: AsyncSession, *, tenant_id: int, username: str
) -> User | None:
    stmt = select(User).where(User.tenant_id == tenant_id, User.username == username)
    return (await session.execute(stmt)).scalar_one_or_none()
