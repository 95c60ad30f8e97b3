"""Transcripts (spec 4.4): list newest first with filters, and one transcript with its turns."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from switchboard.identity.deps import AdminCaller
from switchboard.kit.clock import iso_utc
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import ERROR_RESPONSES, ErrorBody
from switchboard.platform.transcripts import service
from switchboard.platform.transcripts.models import Transcript
from switchboard.platform.transcripts.repository import SHORT_QUERY_WINDOW
from switchboard.platform.transcripts.schemas import (
    TranscriptDetailBody,
    TranscriptItem,
    TranscriptPage,
    TurnItem,
)
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(
    prefix="/api.ashx/v1/transcripts", tags=["transcripts"], responses=ERROR_RESPONSES
)


def _item(row: Transcript) -> TranscriptItem:
    outbound = service.is_outbound(row)
    return TranscriptItem(
        call_id=row.call_id,
        caller_source=row.caller_source,
        started_utc=iso_utc(row.started_at) or "",
        ended_utc=iso_utc(row.ended_at) or "",
        mtime_utc=iso_utc(row.saved_at) if outbound else None,
        duration_sec=row.duration_sec,
        rule=row.rule,
        phone=row.phone if outbound else None,
        display_name=row.display_name if outbound else None,
        number=None if outbound else row.number,
        outcome=row.outcome,
        voice=row.voice if outbound else None,
        language=row.language if outbound else None,
        model=row.model if outbound else None,
        tokens_total=row.tokens_total,
        tokens_prompt=row.tokens_prompt if outbound else None,
        turn_count=row.turn_count,
        size=row.size,
        source=row.caller_source if outbound else None,
        file=row.file,
    )


@router.get(
    "",
    response_model=TranscriptPage,
    summary="List transcripts, newest first (`next` is an integer offset)",
)
async def list_transcripts(
    caller: AdminCaller,
    session: Session,
    paging: Paging,
    source: Annotated[
        str | None,
        Query(
            description="`vnum` (every inbound source) or `outbound-ai`; default both",
            pattern="^(vnum|outbound-ai)?$",
        ),
    ] = None,
    q: Annotated[
        str | None,
        Query(
            max_length=200,
            description=(
                "Substring of caller, number, displayName or rule (case-insensitive). One or "
                f"two characters search only the newest {SHORT_QUERY_WINDOW:,} transcripts of "
                "the tenant (no trigram index can serve them); three or more search all."
            ),
        ),
    ] = None,
    since: Annotated[
        str | None,
        Query(
            max_length=40,
            description="RFC 3339 date-time; keeps transcripts started at or after it",
            json_schema_extra={"format": "date-time"},
        ),
    ] = None,
) -> TranscriptPage:
    query = service.parse_filter(source=source, q=q, since=since)
    found = await service.list_transcripts(
        session, tenant_id=caller.tenant_id, filter=query, limit=paging.limit, offset=paging.offset
    )
    return TranscriptPage(
        data=[_item(row) for row in found.rows],
        total=found.total,
        total_capped=found.capped,
        limit=paging.limit,
        offset=paging.offset,
        next=paging.offset + paging.limit if found.more else None,
    )


@router.get(
    "/{call_id}",
    response_model=TranscriptDetailBody,
    responses={404: {"model": ErrorBody, "description": "No transcript for that callId"}},
    summary="One transcript with its turns",
)
async def get_transcript(
    call_id: str, caller: AdminCaller, session: Session, runtime: RuntimeDep
) -> TranscriptDetailBody:
    detail = await service.get_transcript(
        session,
        tenant_id=caller.tenant_id,
        tenant_name=caller.tenant_name,
        call_id=call_id,
        data_dir=runtime.settings.data_dir,
    )
    row = detail.row
    return TranscriptDetailBody(
        call_id=row.call_id,
        caller_source=row.caller_source,
        tenant=caller.tenant_name,
        requested_by=row.requested_by,
        phone=row.phone,
        display_name=row.display_name,
        email=row.email,
        voice=row.voice,
        language=row.language,
        model=row.model,
        trunk_id=row.trunk_id,
        started_utc=iso_utc(row.started_at) or "",
        answered_utc=iso_utc(row.answered_at) or "",
        ended_utc=iso_utc(row.ended_at) or "",
        duration_sec=row.duration_sec,
        answered=row.answered_at is not None,
        outcome=row.outcome,
        error_detail=row.error_detail,
        input_turns=row.input_turns,
        output_turns=row.output_turns,
        tokens_total=row.tokens_total,
        turns=[TurnItem(**turn) for turn in detail.turns],
    )
