"""Every query of the credential issuer, starting from one tenant-scoped statement per table."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Select, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.identity.issuance.models import CredentialNonce, CredentialOffer, IssuerKey
from switchboard.identity.models import User


def _keys(tenant_id: int) -> Select[IssuerKey]:
    return select(IssuerKey).where(IssuerKey.tenant_id == tenant_id)


def _offers(tenant_id: int) -> Select[CredentialOffer]:
    return select(CredentialOffer).where(CredentialOffer.tenant_id == tenant_id)


async def list_keys(session: AsyncSession, *, tenant_id: int) -> list[IssuerKey]:
    """The tenant's issuer keys, newest first (the first one signs)."""
    stmt = _keys(tenant_id).order_by(IssuerKey.created_at.desc(), IssuerKey.id.desc())
    return list((await session.execute(stmt)).scalars())


async def find_offer_by_code(
    session: AsyncSession, *, tenant_id: int, code_hash: str
) -> CredentialOffer | None:
    stmt = _offers(tenant_id).where(CredentialOffer.code_hash == code_hash)
    return (await session.execute(stmt)).scalar_one_or_none()


async def find_offer_by_token(
    session: AsyncSession, *, tenant_id: int, token_hash: str
) -> CredentialOffer | None:
    stmt = _offers(tenant_id).where(CredentialOffer.token_hash == token_hash)
    return (await session.execute(stmt)).scalar_one_or_none()


async def mark_redeemed(
    session: AsyncSession, *, tenant_id: int, offer_id: int, now: dt.datetime
) -> bool:
    """Spend the pre-authorized code; ``False`` when it was spent already (a race lost too)."""
    result = await session.execute(
        update(CredentialOffer)
        .where(
            CredentialOffer.tenant_id == tenant_id,
            CredentialOffer.id == offer_id,
            CredentialOffer.redeemed_at.is_(None),
        )
        .values(redeemed_at=now)
    )
    return bool(getattr(result, "rowcount", 0))


async def mark_issued(
    session: AsyncSession, *, tenant_id: int, offer_id: int, now: dt.datetime
) -> bool:
    """Spend the access token on one issuance; ``False`` when it was spent already."""
    result = await session.execute(
        update(CredentialOffer)
        .where(
            CredentialOffer.tenant_id == tenant_id,
            CredentialOffer.id == offer_id,
            CredentialOffer.issued_at.is_(None),
        )
        .values(issued_at=now)
    )
    return bool(getattr(result, "rowcount", 0))


async def take_nonce(
    session: AsyncSession, *, tenant_id: int, nonce: str, now: dt.datetime
) -> bool:
    """Use up a live ``c_nonce`` of the tenant; ``False`` when unknown, expired or used."""
    result = await session.execute(
        delete(CredentialNonce).where(
            CredentialNonce.tenant_id == tenant_id,
            CredentialNonce.nonce == nonce,
            CredentialNonce.expires_at > now,
        )
    )
    return bool(getattr(result, "rowcount", 0))


async def find_user(session: AsyncSession, *, tenant_id: int, user_id: int) -> User | None:
    stmt = select(User).where(User.tenant_id == tenant_id, User.id == user_id)
    return (await session.execute(stmt)).scalar_one_or_none()
