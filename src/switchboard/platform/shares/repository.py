"""All SQL for share links; tenant-scoped except the public lookup by token hash."""

from __future__ import annotations

from sqlalchemy import Select, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.platform.shares.models import TranscriptShare


def scoped(tenant_id: int) -> Select[TranscriptShare]:
    return select(TranscriptShare).where(TranscriptShare.tenant_id == tenant_id)


def of_call(tenant_id: int, call_id: str) -> Select[TranscriptShare]:
    return (
        scoped(tenant_id)
        .where(TranscriptShare.call_id == call_id)
        .order_by(TranscriptShare.created_at.desc(), TranscriptShare.id)
    )


async def get(session: AsyncSession, *, tenant_id: int, share_id: str) -> TranscriptShare | None:
    stmt = scoped(tenant_id).where(TranscriptShare.id == share_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def by_token_hash(session: AsyncSession, token_hash: str) -> TranscriptShare | None:
    """The public lookup: the token itself names the tenant (the caller checks the Host's)."""
    stmt = select(TranscriptShare).where(TranscriptShare.token_hash == token_hash)
    return (await session.execute(stmt)).scalar_one_or_none()


def add(session: AsyncSession, share: TranscriptShare) -> None:
    session.add(share)


async def remove(session: AsyncSession, share: TranscriptShare) -> None:
    await session.execute(
        delete(TranscriptShare).where(
            TranscriptShare.tenant_id == share.tenant_id, TranscriptShare.id == share.id
        )
    )
