"""Token Status List (IETF draft-ietf-oauth-status-list-21) for the staff credentials: each
credential gets an entry (``idx``) in one of the tenant's status lists, one bit per entry
(0 valid, 1 invalid: revoked for good). The list is a byte array, entry ``i`` at bit ``i % 8``
(least significant first) of byte ``i // 8``, ZLIB-compressed and base64url-encoded (``lst``).
The same functions read a list on the verifier's side."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import secrets
import zlib
from collections.abc import Iterable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.identity.issuance import repository
from switchboard.identity.issuance.models import IssuedCredential, StatusList
from switchboard.kit.errors import Conflict, NotFound
from switchboard.tenants.models import Tenant

LIST_TYP = "statuslist+jwt"
MEDIA_TYPE = "application/statuslist+jwt"
BITS = 1
VALID = 0
LIST_SIZE = 1 << 17  # entries per list (16 KiB before compression)
TTL = dt.timedelta(minutes=5)  # the token's ttl: how long a verifier may keep it
LIFETIME = dt.timedelta(hours=1)  # the token's exp
MAX_LIST_BYTES = 1 << 20  # a list inflating past this (1 MiB, 8 Mi entries) is refused
ALLOCATION_TRIES = 32


class InvalidList(ValueError):
    """A status list that cannot be read (not base64url, not ZLIB, too large, index outside)."""


def encode(invalid: Iterable[int], *, size: int) -> str:
    """The ``lst`` of a one-bit list of ``size`` entries where ``invalid`` are set."""
    raw = bytearray(size // 8)
    for idx in invalid:
        raw[idx // 8] |= 1 << (idx % 8)
    compressed = zlib.compress(bytes(raw), level=9)
    return base64.urlsafe_b64encode(compressed).rstrip(b"=").decode()


def status_at(lst: str, idx: int, *, bits: int = BITS) -> int:
    """The status of entry ``idx`` of a list of ``bits`` bits per entry (1, 2, 4 or 8)."""
    if bits not in (1, 2, 4, 8) or idx < 0:
        raise InvalidList("bits must be 1, 2, 4 or 8 and the index not negative")
    try:
        compressed = base64.urlsafe_b64decode(lst + "=" * (-len(lst) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(compressed, MAX_LIST_BYTES)
    except (binascii.Error, ValueError, zlib.error):
        raise InvalidList("lst is not base64url-encoded ZLIB data") from None
    if inflater.unconsumed_tail:
        raise InvalidList("the list is too large")
    position = idx * bits
    if position // 8 >= len(raw):
        raise InvalidList("the index is outside the list")
    return (raw[position // 8] >> (position % 8)) & ((1 << bits) - 1)


def uri(identifier: str, list_id: str) -> str:
    """Where the issuer ``identifier`` serves the list ``list_id``."""
    return f"{identifier}/status/{list_id}"


def claims(list_uri: str, lst: str, *, issuer: str, now: dt.datetime) -> dict[str, Any]:
    """The claims of a status list token (section 5.1): ``sub`` is the list's URI."""
    return {
        "iss": issuer,
        "sub": list_uri,
        "iat": int(now.timestamp()),
        "exp": int((now + LIFETIME).timestamp()),
        "ttl": int(TTL.total_seconds()),
        "status_list": {"bits": BITS, "lst": lst},
    }


# The issuer's lists ---------------------------------------------------------------------------


async def _open_list(session: AsyncSession, *, tenant: Tenant, now: dt.datetime) -> StatusList:
    """The list new entries go to; a new one once half of it is used, so random indices stay
    cheap to find (and credentials hide among many entries)."""
    row = await repository.open_status_list(session, tenant_id=tenant.id)
    if row is None:
        row = StatusList(
            tenant_id=tenant.id, list_id=secrets.token_urlsafe(12), size=LIST_SIZE, used=0,
            created_at=now,
        )  # fmt: skip
        session.add(row)
        await session.flush()
    return row


async def allocate(
    session: AsyncSession,
    *,
    tenant: Tenant,
    identifier: str,
    user_id: int,
    username: str,
    expires_at: dt.datetime,
    now: dt.datetime,
) -> dict[str, Any]:
    """A random free entry for a new credential of the user, recorded; its ``status`` claim."""
    row = await _open_list(session, tenant=tenant, now=now)
    used = await repository.used_indices(session, tenant_id=tenant.id, status_list_id=row.id)
    for _ in range(ALLOCATION_TRIES):
        idx = secrets.randbelow(row.size)
        if idx not in used:
            break
    else:  # pragma: no cover - a list is at most half full
        raise RuntimeError("no free status list entry")
    session.add(
        IssuedCredential(
            tenant_id=tenant.id, user_id=user_id, username=username, status_list_id=row.id,
            idx=idx, issued_at=now, expires_at=expires_at,
        )
    )  # fmt: skip
    row.used += 1
    await session.flush()
    return {"status_list": {"idx": idx, "uri": uri(identifier, row.list_id)}}


async def list_value(session: AsyncSession, *, tenant: Tenant, list_id: str) -> str:
    """The ``lst`` of the tenant's list ``list_id`` as it stands (NotFound for another's)."""
    row = await repository.find_status_list(session, tenant_id=tenant.id, list_id=list_id)
    if row is None:
        raise NotFound("no such status list")
    revoked = await repository.revoked_indices(session, tenant_id=tenant.id, status_list_id=row.id)
    return encode(revoked, size=row.size)


async def entry_status(session: AsyncSession, *, tenant: Tenant, list_id: str, idx: int) -> int:
    """The status of one entry of the tenant's own list, read where it is kept."""
    return status_at(await list_value(session, tenant=tenant, list_id=list_id), idx)


async def credentials(
    session: AsyncSession, *, tenant: Tenant
) -> list[tuple[IssuedCredential, str]]:
    """The staff credentials the tenant issued, newest first, with their list's identifier."""
    return await repository.list_credentials(session, tenant_id=tenant.id)


async def revoke(
    session: AsyncSession, *, tenant: Tenant, credential_id: int, now: dt.datetime
) -> IssuedCredential:
    """Revoke one credential for good (its list entry turns invalid)."""
    row = await repository.find_credential(
        session, tenant_id=tenant.id, credential_id=credential_id
    )
    if row is None:
        raise NotFound(f"no credential {credential_id}")
    if row.revoked_at is not None:
        raise Conflict(f"credential {credential_id} is revoked already", code="already_revoked")
    row.revoked_at, row.revoked_reason = now, "revoked by an administrator"
    await session.flush()
    return row


async def revoke_user(
    session: AsyncSession, *, tenant_id: int, user_id: int, reason: str, now: dt.datetime
) -> int:
    """Revoke every live credential of a user (disabled or deleted); how many."""
    return await repository.revoke_for_user(
        session, tenant_id=tenant_id, user_id=user_id, reason=reason, now=now
    )
