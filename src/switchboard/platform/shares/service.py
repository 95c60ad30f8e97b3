"""Share rules: create (token shown once), list, revoke, and open a share publicly.

These are the functions the REST endpoints and the operator console call. Each emits its
``share.*`` event in the caller's transaction.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock, iso_utc
from switchboard.kit.crypto import random_token, sha256_hex
from switchboard.kit.errors import BadRequest, NotFound
from switchboard.kit.paging import PageParams, fetch_page
from switchboard.platform.events import catalogue
from switchboard.platform.shares import repository
from switchboard.platform.shares.models import TranscriptShare
from switchboard.platform.transcripts import service as transcripts
from switchboard.platform.transcripts.service import TranscriptDetail
from switchboard.platform.webhooks.outbox import emit

MAX_TTL_HOURS = 8760  # one year; 0 means the share never expires
TOKEN_BYTES = 32  # 256 random bits (at least 128 are required)
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")
ELLIPSIS = "\u2026"


def token_hint(tail: str) -> str:
    """How events and lists show a token: an ellipsis and its last 8 characters."""
    return f"{ELLIPSIS}{tail}"


def is_expired(share: TranscriptShare, now: dt.datetime) -> bool:
    return share.expires_at is not None and share.expires_at <= now


@dataclass(frozen=True, slots=True)
class CreatedShare:
    share: TranscriptShare
    file: str
    token: str  # shown once, never stored
    url: str


@dataclass(frozen=True, slots=True)
class SharedTranscript:
    share: TranscriptShare
    detail: TranscriptDetail


async def create_share(
    session: AsyncSession,
    *,
    tenant_id: int,
    tenant_name: str,
    call_id: str,
    ttl_hours: int,
    created_by: str,
    base_url: str,
    clock: Clock,
) -> CreatedShare:
    """A new public link to a call's transcript; ``url`` and ``token`` are never shown again."""
    if not 0 <= ttl_hours <= MAX_TTL_HOURS:
        raise BadRequest(f"ttlHours: 0 (never expires) to {MAX_TTL_HOURS}")
    transcript = await transcripts.get_row(session, tenant_id=tenant_id, call_id=call_id)
    now = clock.now()
    token = random_token(nbytes=TOKEN_BYTES)
    share = TranscriptShare(
        id="shr_" + secrets.token_hex(8),
        tenant_id=tenant_id,
        transcript_id=transcript.id,
        call_id=call_id,
        token_hash=sha256_hex(token),
        token_tail=token[-8:],
        ttl_hours=ttl_hours,
        created_by=created_by[:128],
        created_at=now,
        expires_at=now + dt.timedelta(hours=ttl_hours) if ttl_hours else None,
        views=0,
    )
    repository.add(session, share)
    await session.flush()
    await emit(
        session, tenant_id=tenant_id, tenant_name=tenant_name, event=catalogue.SHARE_CREATED,
        data={
            "token": token_hint(share.token_tail),
            "file": transcript.file,
            "ttlHours": ttl_hours,
            "createdBy": share.created_by,
            "expiresUtc": iso_utc(share.expires_at),
        },
        clock=clock,
    )  # fmt: skip
    return CreatedShare(
        share=share, file=transcript.file, token=token, url=share_url(base_url, token)
    )


def share_url(base_url: str, token: str) -> str:
    return f"{base_url}/share/{token}"


async def list_shares(
    session: AsyncSession, *, tenant_id: int, call_id: str, paging: PageParams
) -> tuple[list[TranscriptShare], int, str]:
    """A page of a transcript's live and expired shares (newest first), the total and the
    transcript's file. Revoked shares no longer exist."""
    transcript = await transcripts.get_row(session, tenant_id=tenant_id, call_id=call_id)
    rows, total = await fetch_page(session, repository.of_call(tenant_id, call_id), paging)
    return [row for (row,) in rows], total, transcript.file


async def revoke_share(
    session: AsyncSession,
    *,
    tenant_id: int,
    tenant_name: str,
    share_id: str,
    revoked_by: str,
    clock: Clock,
) -> tuple[TranscriptShare, str]:
    """Delete the share (and so its token): its URL answers 404 from now on."""
    share = await repository.get(session, tenant_id=tenant_id, share_id=share_id)
    if share is None:
        raise NotFound(f"no share {share_id!r}")
    transcript = await transcripts.get_row(session, tenant_id=tenant_id, call_id=share.call_id)
    await repository.remove(session, share)
    await emit(
        session, tenant_id=tenant_id, tenant_name=tenant_name, event=catalogue.SHARE_REVOKED,
        data={
            "token": token_hint(share.token_tail),
            "file": transcript.file,
            "revokedBy": revoked_by,
        },
        clock=clock,
    )  # fmt: skip
    return share, transcript.file


async def open_share(
    session: AsyncSession,
    *,
    tenant_id: int,
    tenant_name: str,
    token: str,
    viewer_ip: str,
    data_dir: Path,
    clock: Clock,
    count: bool = True,
) -> SharedTranscript:
    """The transcript behind a token, for the Host's tenant; counts the view and emits
    ``share.viewed`` (unless ``count`` is False: a HEAD is no view). Unknown, revoked,
    expired or another tenant's token: ``NotFound``."""
    missing = NotFound("no such share; it may have expired or been revoked")
    if not TOKEN_RE.match(token):
        raise missing
    share = await repository.by_token_hash(session, sha256_hex(token))
    now = clock.now()
    if share is None or share.tenant_id != tenant_id or is_expired(share, now):
        raise missing
    detail = await transcripts.get_transcript(
        session, tenant_id=tenant_id, tenant_name=tenant_name, call_id=share.call_id,
        data_dir=data_dir,
    )  # fmt: skip
    if not count:
        return SharedTranscript(share=share, detail=detail)
    share.views += 1
    share.last_viewed_at = now
    await session.flush()
    await emit(
        session, tenant_id=tenant_id, tenant_name=tenant_name, event=catalogue.SHARE_VIEWED,
        data={
            "token": token_hint(share.token_tail),
            "file": detail.row.file,
            "viewerIp": viewer_ip,
        },
        clock=clock,
    )  # fmt: skip
    return SharedTranscript(share=share, detail=detail)
