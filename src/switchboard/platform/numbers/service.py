"""Virtual-number rules: validation, sealed secrets, tenant-scoped lookups.

The AI engine key and the system prompt are sealed with the runtime's ``SecretBox`` before
they reach the database, and are opened only by ``reveal_secrets`` (for the media bridge).
Nothing here logs them; the model's ``repr`` leaves them out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.kit.crypto import SecretBox
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.platform.numbers import repository
from switchboard.platform.numbers.models import (
    DEFAULT_MAX_DURATION_SEC,
    MODE_LIVE_VOICE_AI,
    MODES,
    VISIBILITIES,
    VirtualNumber,
)
from switchboard.platform.routing.matching import canonical_number
from switchboard.tenants.config import VOICES

NUMBER_RE = re.compile(r"^\+?[0-9A-Za-z*#._-]{1,32}$")
LANGUAGE_RE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$")
MIN_DURATION_SEC = 10
MAX_DURATION_SEC = 3600
MAX_NAME = 128
MAX_API_KEY = 1024
MAX_SYSTEM_PROMPT = 100_000


@dataclass(frozen=True, slots=True)
class NumberChanges:
    """Fields an update may change; ``None`` leaves a field as it is."""

    name: str | None = None
    mode: str | None = None
    voice: str | None = None
    language: str | None = None
    save_transcripts: bool | None = None
    max_duration_sec: int | None = None
    visibility: str | None = None
    api_key: str | None = None
    system_prompt: str | None = None


def _check_number(number: str) -> str:
    if len(number) > 32 or not NUMBER_RE.match(number):
        raise BadRequest(
            "number: 1 to 32 characters of digits, letters, '+' (leading), '*', '#', '.', '_', '-'"
        )
    return number


def _validate(changes: NumberChanges) -> None:
    if changes.name is not None and not 1 <= len(changes.name.strip()) <= MAX_NAME:
        raise BadRequest(f"name: 1 to {MAX_NAME} characters")
    if changes.mode is not None and changes.mode not in MODES:
        raise BadRequest(f"mode: must be one of {', '.join(MODES)}")
    if changes.voice is not None and changes.voice not in VOICES:
        raise BadRequest(f"voice: must be one of {', '.join(VOICES)}")
    if changes.language is not None and not LANGUAGE_RE.match(changes.language):
        raise BadRequest("language: a locale tag such as en-US")
    if changes.max_duration_sec is not None and not (
        MIN_DURATION_SEC <= changes.max_duration_sec <= MAX_DURATION_SEC
    ):
        raise BadRequest(f"maxDurationSec: {MIN_DURATION_SEC} to {MAX_DURATION_SEC}")
    if changes.visibility is not None and changes.visibility not in VISIBILITIES:
        raise BadRequest(f"visibility: must be one of {', '.join(VISIBILITIES)}")
    if changes.api_key is not None and not 1 <= len(changes.api_key.strip()) <= MAX_API_KEY:
        raise BadRequest(f"apiKey: 1 to {MAX_API_KEY} characters")
    if changes.system_prompt is not None and not (
        len(changes.system_prompt.strip()) >= 1 and len(changes.system_prompt) <= MAX_SYSTEM_PROMPT
    ):
        raise BadRequest(f"systemPrompt: 1 to {MAX_SYSTEM_PROMPT} characters")


async def find_number(
    session: AsyncSession, *, tenant_id: int, number: str
) -> VirtualNumber | None:
    """The tenant's virtual number ``number``, or None (another tenant's number is None too)."""
    return await repository.get_by_number(session, tenant_id=tenant_id, number=number)


def did_spellings(did: str) -> list[str]:
    """How a dialled number may be stored: as dialled, and its ``+`` form when dialled ``00``."""
    return list(dict.fromkeys((did, canonical_number(did))))


async def find_number_for_did(
    session: AsyncSession, *, tenant_id: int, did: str
) -> VirtualNumber | None:
    """The tenant's virtual number a SIP call to ``did`` reaches, or None."""
    for spelling in did_spellings(did):
        row = await find_number(session, tenant_id=tenant_id, number=spelling)
        if row is not None:
            return row
    return None


async def numbers_for_did_in_any_tenant(session: AsyncSession, *, did: str) -> list[VirtualNumber]:
    """The virtual numbers of every tenant that a SIP call to ``did`` could reach."""
    return await repository.with_number_in_any_tenant(session, numbers=did_spellings(did))


async def require_number(session: AsyncSession, *, tenant_id: int, number: str) -> VirtualNumber:
    row = await find_number(session, tenant_id=tenant_id, number=number)
    if row is None:
        raise NotFound(f"no virtual number {number!r}")
    return row


def reveal_secrets(number: VirtualNumber, box: SecretBox) -> tuple[str, str]:
    """``(api_key, system_prompt)`` in clear, for handing to the media bridge. Never log them."""
    return box.open(number.api_key_sealed), box.open(number.system_prompt_sealed)


async def list_numbers(
    session: AsyncSession, *, tenant_id: int, limit: int, offset: int
) -> tuple[list[VirtualNumber], int]:
    """One page of the tenant's numbers ordered by number, and the total."""
    return await repository.page(session, tenant_id=tenant_id, limit=limit, offset=offset)


async def create_number(
    session: AsyncSession,
    *,
    tenant_id: int,
    name: str,
    number: str,
    voice: str,
    language: str,
    api_key: str,
    system_prompt: str,
    save_transcripts: bool = True,
    max_duration_sec: int = DEFAULT_MAX_DURATION_SEC,
    visibility: str = "public",
    mode: str = MODE_LIVE_VOICE_AI,
    box: SecretBox,
    clock: Clock,
) -> VirtualNumber:
    _check_number(number)
    _validate(
        NumberChanges(
            name=name, mode=mode, voice=voice, language=language,
            save_transcripts=save_transcripts, max_duration_sec=max_duration_sec,
            visibility=visibility, api_key=api_key, system_prompt=system_prompt,
        )
    )  # fmt: skip
    if await find_number(session, tenant_id=tenant_id, number=number) is not None:
        raise Conflict(f"virtual number {number!r} already exists", code="duplicate_number")
    now = clock.now()
    row = VirtualNumber(
        tenant_id=tenant_id,
        name=name.strip(),
        number=number,
        mode=mode,
        voice=voice,
        language=language,
        save_transcripts=save_transcripts,
        max_duration_sec=max_duration_sec,
        visibility=visibility,
        api_key_sealed=box.seal(api_key.strip()),
        system_prompt_sealed=box.seal(system_prompt),
        created_at=now,
        updated_at=now,
    )
    repository.add(session, row)
    try:
        await session.flush()
    except IntegrityError:  # a concurrent create of the same number won the race
        raise Conflict(
            f"virtual number {number!r} already exists", code="duplicate_number"
        ) from None
    return row


async def update_number(
    session: AsyncSession,
    *,
    tenant_id: int,
    number: str,
    changes: NumberChanges,
    box: SecretBox,
    clock: Clock,
) -> VirtualNumber:
    _validate(changes)
    row = await require_number(session, tenant_id=tenant_id, number=number)
    if changes.name is not None:
        row.name = changes.name.strip()
    for field in (
        "mode",
        "voice",
        "language",
        "save_transcripts",
        "max_duration_sec",
        "visibility",
    ):
        value = getattr(changes, field)
        if value is not None:
            setattr(row, field, value)
    if changes.api_key is not None:
        row.api_key_sealed = box.seal(changes.api_key.strip())
    if changes.system_prompt is not None:
        row.system_prompt_sealed = box.seal(changes.system_prompt)
    row.updated_at = clock.now()
    await session.flush()
    return row


async def delete_number(session: AsyncSession, *, tenant_id: int, number: str) -> VirtualNumber:
    row = await require_number(session, tenant_id=tenant_id, number=number)
    await repository.delete(session, row)
    await session.flush()
    return row
