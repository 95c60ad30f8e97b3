from __future__ import annotations

from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from switchboard.kit.schemas import Page, Schema, one_of, sometimes_absent
from switchboard.platform.events.payloads import OUTCOMES
from switchboard.platform.transcripts.models import CALLER_SOURCES, OUTBOUND_SOURCE
from switchboard.platform.transcripts.repository import TOTAL_CAP
from switchboard.platform.transcripts.service import SPEAKERS

# Present only on outbound items (spec 2.6); inbound items carry ``number`` instead.
_OUTBOUND_ONLY = (
    "phone", "displayName", "mtimeUtc", "voice", "language", "model", "tokensPrompt", "source",
)  # fmt: skip


class TranscriptItem(Schema):
    """One transcript in the list (spec 2.6). Fields of the other direction are absent."""

    call_id: str = Field(description="`oac-...` for outbound, `vnum...` for inbound")
    caller_source: str = one_of(CALLER_SOURCES)
    started_utc: str
    ended_utc: str
    mtime_utc: str | None = sometimes_absent("Outbound items only")
    duration_sec: int
    rule: str = Field(description="Label of the rule or number")
    phone: str | None = sometimes_absent("Outbound items only")
    display_name: str | None = sometimes_absent("Outbound items only")
    number: str | None = sometimes_absent("Inbound items only")
    outcome: str = one_of(OUTCOMES)
    voice: str | None = sometimes_absent("Outbound items only")
    language: str | None = sometimes_absent("Outbound items only")
    model: str | None = sometimes_absent("Outbound items only")
    tokens_total: int
    tokens_prompt: int | None = sometimes_absent("Outbound items only")
    turn_count: int
    size: int = Field(description="Bytes of the transcript file")
    source: str | None = sometimes_absent("Outbound items only", values=(OUTBOUND_SOURCE,))
    file: str = Field(description="Transcript file name")

    # No return annotation on purpose: pydantic would otherwise document the item as a bare
    # object instead of deriving its schema from the fields.
    @model_serializer(mode="wrap")
    def _drop_other_direction(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        body: dict[str, Any] = handler(self)
        outbound = self.caller_source == "outbound-ai"
        for key in _OUTBOUND_ONLY if not outbound else ("number",):
            body.pop(key, None)
        return body


class TranscriptPage(Page[TranscriptItem]):
    total: int = Field(
        description=f"Matching transcripts, counted up to {TOTAL_CAP:,}: with more, {TOTAL_CAP:,}"
        " and `totalCapped` is true"
    )
    total_capped: bool = Field(
        default=False,
        description=f"Present, and true, only when more than {TOTAL_CAP:,} transcripts match:"
        " `total` is then a lower bound and `next` alone tells whether another page follows."
        " Absent otherwise, so the envelope is exactly spec 2.1's",
    )
    next: int | None = Field(description="Offset of the next page (an integer), null on the last")

    @model_serializer(mode="wrap")
    def _capped_only_when_true(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        body: dict[str, Any] = handler(self)
        if not self.total_capped:
            body.pop("totalCapped", None)
        return body


class TurnItem(Schema):
    speaker: str = one_of(SPEAKERS)
    text: str
    ts: str = Field(description="ISO 8601 UTC")


class TranscriptDetailBody(Schema):
    """A transcript with its turns (spec 2.7)."""

    call_id: str
    caller_source: str = one_of(CALLER_SOURCES)
    tenant: str
    requested_by: str
    phone: str
    display_name: str
    email: str
    voice: str
    language: str
    model: str
    trunk_id: str
    started_utc: str
    answered_utc: str = Field(description="Empty string when the call was not answered")
    ended_utc: str
    duration_sec: int
    answered: bool
    outcome: str = one_of(OUTCOMES)
    error_detail: str
    input_turns: int
    output_turns: int
    tokens_total: int
    turns: list[TurnItem]
