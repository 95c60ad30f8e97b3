from __future__ import annotations

from pydantic import Field

from switchboard.kit.schemas import Page, Schema, StrictInput, one_of
from switchboard.platform.events.payloads import OUTCOMES
from switchboard.platform.shares.service import MAX_TTL_HOURS
from switchboard.platform.transcripts.models import CALLER_SOURCES
from switchboard.platform.transcripts.service import SPEAKERS


class ShareCreate(StrictInput):
    ttl_hours: int = Field(
        ge=0,
        le=MAX_TTL_HOURS,
        description=f"Hours until it expires: 0 never, at most {MAX_TTL_HOURS}",
    )


class ShareItem(Schema):
    """A share link; the token itself is only in the creation response."""

    id: str
    call_id: str
    file: str = Field(description="The transcript file it shows")
    token_hint: str = Field(description="An ellipsis and the token's last 8 characters")
    ttl_hours: int
    created_by: str
    created_utc: str
    expires_utc: str | None = Field(description="Null when ttlHours is 0")
    expired: bool
    views: int
    last_viewed_utc: str | None


class ShareCreated(ShareItem):
    """The new share with its public ``url`` and ``token``: shown this once, never again."""

    url: str = Field(description="The public page: `<tenant base URL>/share/<token>`")
    token: str = Field(description="256 random bits, base64url; only its SHA-256 is stored")


class ShareRevoked(Schema):
    id: str
    call_id: str
    file: str
    token_hint: str
    revoked_by: str
    revoked_utc: str


class SharePage(Page[ShareItem]):
    pass


class SharedTurn(Schema):
    speaker: str = one_of(SPEAKERS)
    text: str
    ts: str


class SharedTranscriptBody(Schema):
    """What a share shows publicly: the conversation, without internal fields (e-mail, model,
    tokens, trunk, who requested the call)."""

    call_id: str
    caller_source: str = one_of(CALLER_SOURCES)
    display_name: str
    phone: str
    number: str
    started_utc: str
    answered_utc: str
    ended_utc: str
    duration_sec: int
    outcome: str = one_of(OUTCOMES)
    expires_utc: str | None
    turns: list[SharedTurn]
