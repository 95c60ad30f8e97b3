"""Transcript rules: saving a finished call's transcript, listing and reading them.

``save_transcript`` is called by the call machinery (outbound calls, virtual numbers, SIP
receptionist) inside the transaction that ends the call. The caller emits ``transcript.saved``
itself, after its terminal event, with the file name returned here.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock, iso_utc, parse_iso_utc
from switchboard.kit.errors import BadRequest, NotFound
from switchboard.platform.events.payloads import OUTCOMES
from switchboard.platform.transcripts import repository, storage
from switchboard.platform.transcripts.models import (
    CALLER_SOURCES,
    OUTBOUND_SOURCE,
    Transcript,
)
from switchboard.platform.transcripts.repository import TranscriptFilter

log = logging.getLogger("switchboard.transcripts")

SPEAKERS = ("AI", "Caller")
# What ``outcome`` holds: the glossary (spec 6.3), or nothing after a technical failure.
CALL_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
FILE_FORMAT = 1
SOURCE_FILTERS = ("vnum", OUTBOUND_SOURCE)


@dataclass(frozen=True, slots=True)
class Turn:
    speaker: str  # "AI" or "Caller"
    text: str
    ts: dt.datetime


@dataclass(frozen=True, slots=True)
class TranscriptInput:
    """Everything known about a finished call that the transcript records."""

    call_id: str
    caller_source: str  # outbound-ai | vnum | office-tab | sip
    requested_by: str
    phone: str
    display_name: str
    email: str
    number: str
    rule: str
    voice: str
    language: str
    model: str
    trunk_id: str
    started: dt.datetime
    answered: dt.datetime | None
    ended: dt.datetime
    outcome: str
    error_detail: str
    tokens_prompt: int
    tokens_total: int
    input_turns: int
    output_turns: int
    turns: list[Turn] = field(default_factory=list)


def search_text(data: TranscriptInput) -> str:
    """The lower-cased text ``q`` matches: caller, number, displayName, rule, one per line."""
    return "\n".join(v for v in (data.phone, data.number, data.display_name, data.rule)).lower()


def _validate(data: TranscriptInput) -> None:
    if not CALL_ID_RE.match(data.call_id):
        raise ValueError("call_id: 1 to 64 letters, digits, '-' or '_'")
    if data.caller_source not in CALLER_SOURCES:
        raise ValueError(f"caller_source: one of {', '.join(CALLER_SOURCES)}")
    if data.outcome not in OUTCOMES:
        raise ValueError(f"outcome: one of {', '.join(OUTCOMES[1:])}, or empty")
    for turn in data.turns:
        if turn.speaker not in SPEAKERS:
            raise ValueError("turn speaker: 'AI' or 'Caller'")
    for moment in (data.started, data.answered, data.ended, *(t.ts for t in data.turns)):
        if moment is not None and moment.tzinfo is None:
            raise ValueError("transcript times must be timezone-aware UTC")


def duration_sec(started: dt.datetime, ended: dt.datetime) -> int:
    return max(0, round((ended - started).total_seconds()))


def _file_name(data: TranscriptInput) -> str:
    stamp = data.started.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    # The random part keeps a re-save (or a rolled-back attempt) from touching another file.
    return f"{data.call_id}-{stamp}-{secrets.token_hex(3)}.json"


def _document(data: TranscriptInput, *, tenant_name: str, saved: dt.datetime) -> dict[str, Any]:
    return {
        "format": FILE_FORMAT,
        "callId": data.call_id,
        "callerSource": data.caller_source,
        "tenant": tenant_name,
        "requestedBy": data.requested_by,
        "phone": data.phone,
        "displayName": data.display_name,
        "email": data.email,
        "number": data.number,
        "rule": data.rule,
        "voice": data.voice,
        "language": data.language,
        "model": data.model,
        "trunkId": data.trunk_id,
        "startedUtc": iso_utc(data.started),
        "answeredUtc": iso_utc(data.answered),
        "endedUtc": iso_utc(data.ended),
        "savedUtc": iso_utc(saved),
        "outcome": data.outcome,
        "errorDetail": data.error_detail,
        "tokensPrompt": data.tokens_prompt,
        "tokensTotal": data.tokens_total,
        "inputTurns": data.input_turns,
        "outputTurns": data.output_turns,
        "turns": [{"speaker": t.speaker, "text": t.text, "ts": iso_utc(t.ts)} for t in data.turns],
    }


async def save_transcript(
    session: AsyncSession,
    *,
    tenant_id: int,
    tenant_name: str,
    data: TranscriptInput,
    data_dir: Path,
    clock: Clock,
) -> str:
    """Write the transcript file and its index row; return the file name.

    The file is written (atomically, fsynced) before the row is flushed; a rollback of the
    surrounding transaction removes the file again. Saving a call that already has a
    transcript replaces it: the row is updated and the old file is removed after commit.
    """
    _validate(data)
    saved = clock.now()
    file = _file_name(data)
    payload = orjson.dumps(
        _document(data, tenant_name=tenant_name, saved=saved), option=orjson.OPT_INDENT_2
    )
    path = storage.file_path(data_dir, tenant_name, file)
    await asyncio.to_thread(storage.write_atomically, path, payload)
    storage.track_written(session, path)

    row = await repository.get_by_call_id(session, tenant_id=tenant_id, call_id=data.call_id)
    if row is None:
        row = Transcript(tenant_id=tenant_id, call_id=data.call_id)
        repository.add(session, row)
    else:
        storage.track_replaced(session, storage.file_path(data_dir, tenant_name, row.file))
    row.caller_source = data.caller_source
    row.requested_by = data.requested_by
    row.phone = data.phone
    row.display_name = data.display_name
    row.email = data.email
    row.number = data.number
    row.rule = data.rule
    row.voice = data.voice
    row.language = data.language
    row.model = data.model
    row.trunk_id = data.trunk_id
    row.started_at = data.started
    row.answered_at = data.answered
    row.ended_at = data.ended
    row.saved_at = saved
    row.duration_sec = duration_sec(data.started, data.ended)
    row.outcome = data.outcome
    row.error_detail = data.error_detail
    row.tokens_prompt = data.tokens_prompt
    row.tokens_total = data.tokens_total
    row.input_turns = data.input_turns
    row.output_turns = data.output_turns
    row.turn_count = len(data.turns)
    row.size = len(payload)
    row.file = file
    row.search_text = search_text(data)
    await session.flush()
    log.info(
        "transcript saved: tenant=%s call=%s file=%s turns=%d",
        tenant_name, data.call_id, file, len(data.turns),
    )  # fmt: skip
    return file


def parse_filter(*, source: str | None, q: str | None, since: str | None) -> TranscriptFilter:
    """Validate the list query; a bad value is 400 and naming the parameter."""
    if source in ("", None):
        source = None
    elif source not in SOURCE_FILTERS:
        raise BadRequest(f"source: must be one of {', '.join(SOURCE_FILTERS)}")
    since_at = None
    if since is not None:
        try:
            since_at = parse_iso_utc(since)
        except ValueError:
            raise BadRequest("since: not an ISO 8601 UTC time") from None
    query = (q or "").strip().lower() or None
    if query is not None and len(query) > 200:
        raise BadRequest("q: at most 200 characters")
    return TranscriptFilter(source=source, q=query, since=since_at)


async def list_transcripts(
    session: AsyncSession, *, tenant_id: int, filter: TranscriptFilter, limit: int, offset: int
) -> repository.Found:
    """One page of the tenant's transcripts, newest first by start time, and the total.

    The total counts at most ``repository.TOTAL_CAP`` matches (``Found.capped`` past it); a
    ``q`` of one or two characters searches the newest ``repository.SHORT_QUERY_WINDOW``
    transcripts only (docs/decisions/0402-transcript-list-bounded.md).
    """
    return await repository.page(
        session, tenant_id=tenant_id, filter=filter, limit=limit, offset=offset
    )


async def get_row(session: AsyncSession, *, tenant_id: int, call_id: str) -> Transcript:
    """The index row of a call's transcript; ``NotFound`` when the call has none."""
    row = await repository.get_by_call_id(session, tenant_id=tenant_id, call_id=call_id)
    if row is None:
        raise NotFound(f"no transcript for call {call_id!r}")
    return row


@dataclass(frozen=True, slots=True)
class TranscriptDetail:
    row: Transcript
    turns: list[dict[str, str]]


async def get_transcript(
    session: AsyncSession, *, tenant_id: int, tenant_name: str, call_id: str, data_dir: Path
) -> TranscriptDetail:
    """The index row and the turns from the file; ``NotFound`` when the call has none."""
    row = await get_row(session, tenant_id=tenant_id, call_id=call_id)
    raw = await asyncio.to_thread(
        storage.read_bytes, storage.file_path(data_dir, tenant_name, row.file)
    )
    turns: list[dict[str, str]] = []
    if raw is None:
        log.warning("transcript file missing: tenant=%s file=%s", tenant_name, row.file)
    else:
        document = orjson.loads(raw)
        turns = [
            {"speaker": str(t["speaker"]), "text": str(t["text"]), "ts": str(t["ts"])}
            for t in document.get("turns", [])
        ]
    return TranscriptDetail(row=row, turns=turns)


def is_outbound(row: Transcript) -> bool:
    return row.caller_source == OUTBOUND_SOURCE


async def file_bytes(*, data_dir: Path, tenant_name: str, file: str) -> bytes:
    """The bytes of a saved transcript file (empty when it is missing)."""
    raw = await asyncio.to_thread(
        storage.read_bytes, storage.file_path(data_dir, tenant_name, file)
    )
    return raw or b""
