"""Every query of the wallet sign-in, starting from one tenant-scoped statement per table."""

from __future__ import annotations

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import User
from switchboard.identity.wallet.models import PresentationRequest, TrustedIssuer


def _issuers(tenant_id: int) -> Select[TrustedIssuer]:
    return select(TrustedIssuer).where(TrustedIssuer.tenant_id == tenant_id)


async def list_issuers(session: AsyncSession, *, tenant_id: int) -> list[TrustedIssuer]:
    stmt = _issuers(tenant_id).order_by(TrustedIssuer.name)
    return list((await session.execute(stmt)).scalars())


async def find_issuer(session: AsyncSession, *, tenant_id: int, name: str) -> TrustedIssuer | None:
    stmt = _issuers(tenant_id).where(TrustedIssuer.name == name)
    return (await session.execute(stmt)).scalar_one_or_none()


async def find_request(
    session: AsyncSession, *, tenant_id: int, state: str
) -> PresentationRequest | None:
    stmt = select(PresentationRequest).where(
        PresentationRequest.tenant_id == tenant_id, PresentationRequest.state == state
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def find_user(session: AsyncSession, *, tenant_id: int, user_id: int) -> User | None:
    stmt = select(User).where(User.tenant_id == tenant_id, User.id == user_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def find_user_by_username(
    session: AsyncSession, *, tenant_id: int, username: str
) -> User | None:
    stmt = select(User).where(User.tenant_id == tenant_id, User.username == username)
    return (await session.execute(stmt)).scalar_one_or_none()
