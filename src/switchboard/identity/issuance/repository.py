"""Every query of the credential issuer, starting from one tenant-scoped statement per table."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Select, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import User
from switchboard.identity.issuance.models import (
    CredentialNonce,
    CredentialOffer,
    IssuedCredential,
    IssuerKey,
    StatusList,
)


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


async def _stamp_once(
    session: AsyncSession, tenant_id: int, offer_id: int, column: Any, now: dt.datetime
) -> bool:
    """Set ``column`` of the offer to ``now`` unless it is set; ``False`` when it was (a race
    lost included)."""
    result = await session.execute(
        update(CredentialOffer)
        .where(
            CredentialOffer.tenant_id == tenant_id,
            CredentialOffer.id == offer_id,
            column.is_(None),
        )
        .values({column.key: now})
    )
    return bool(getattr(result, "rowcount", 0))


async def mark_redeemed(
    session: AsyncSession, *, tenant_id: int, offer_id: int, now: dt.datetime
) -> bool:
    """Spend the pre-authorized code; ``False`` when it was spent already."""
    return await _stamp_once(session, tenant_id, offer_id, CredentialOffer.redeemed_at, now)


async def mark_issued(
    session: AsyncSession, *, tenant_id: int, offer_id: int, now: dt.datetime
) -> bool:
    """Spend the access token on one issuance; ``False`` when it was spent already."""
    return await _stamp_once(session, tenant_id, offer_id, CredentialOffer.issued_at, now)


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


# Status lists and issued credentials ------------------------------------------------------


def _lists(tenant_id: int) -> Select[StatusList]:
    return select(StatusList).where(StatusList.tenant_id == tenant_id)


def _credentials(tenant_id: int) -> Select[IssuedCredential]:
    return select(IssuedCredential).where(IssuedCredential.tenant_id == tenant_id)


async def open_status_list(session: AsyncSession, *, tenant_id: int) -> StatusList | None:
    """The tenant's newest status list with room left (locked against a concurrent issuance)."""
    stmt = (
        _lists(tenant_id)
        .where(StatusList.used * 2 < StatusList.size)
        .order_by(StatusList.id.desc())
        .limit(1)
        .with_for_update()
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def find_status_list(
    session: AsyncSession, *, tenant_id: int, list_id: str
) -> StatusList | None:
    stmt = _lists(tenant_id).where(StatusList.list_id == list_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def used_indices(session: AsyncSession, *, tenant_id: int, status_list_id: int) -> set[int]:
    stmt = select(IssuedCredential.idx).where(
        IssuedCredential.tenant_id == tenant_id, IssuedCredential.status_list_id == status_list_id
    )
    return set((await session.execute(stmt)).scalars())


async def revoked_indices(
    session: AsyncSession, *, tenant_id: int, status_list_id: int
) -> list[int]:
    stmt = select(IssuedCredential.idx).where(
        IssuedCredential.tenant_id == tenant_id,
        IssuedCredential.status_list_id == status_list_id,
        IssuedCredential.revoked_at.is_not(None),
    )
    return list((await session.execute(stmt)).scalars())


async def list_credentials(
    session: AsyncSession, *, tenant_id: int
) -> list[tuple[IssuedCredential, str]]:
    """The tenant's issued credentials, newest first, with their status list's identifier."""
    stmt = (
        select(IssuedCredential, StatusList.list_id)
        .join(StatusList, StatusList.id == IssuedCredential.status_list_id)
        .where(IssuedCredential.tenant_id == tenant_id)
        .order_by(IssuedCredential.id.desc())
    )
    return [(row, list_id) for row, list_id in (await session.execute(stmt)).all()]


async def find_credential(
    session: AsyncSession, *, tenant_id: int, credential_id: int
) -> IssuedCredential | None:
    stmt = _credentials(tenant_id).where(IssuedCredential.id == credential_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def revoke_for_user(
    session: AsyncSession, *, tenant_id: int, user_id: int, reason: str, now: dt.datetime
) -> int:
    """Revoke every live credential of a user; how many."""
    result = await session.execute(
        update(IssuedCredential)
        .where(
            IssuedCredential.tenant_id == tenant_id,
            IssuedCredential.user_id == user_id,
            IssuedCredential.revoked_at.is_(None),
        )
        .values(revoked_at=now, revoked_reason=reason)
    )
    return int(getattr(result, "rowcount", 0))
