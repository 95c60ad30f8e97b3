"""Request and response bodies of /api.ashx/v1/calls (spec 2.2-2.4, 3.1)."""

from __future__ import annotations

import datetime as dt
import re

from pydantic import Field, field_validator
from pydantic.config import JsonDict

from switchboard.kit.clock import parse_iso_utc
from switchboard.kit.schemas import Schema, StrictInput, one_of, sometimes_absent
from switchboard.platform.calls.models import STATUSES
from switchboard.platform.events.payloads import OUTCOMES
from switchboard.tenants.config import LOCALE_RE, VOICES

E164_RE = re.compile(r"^\+[1-9][0-9]{6,14}$")
EMAIL_RE = re.compile(
    r"^[^@\s]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$"
)
UTC_SUFFIX_RE = re.compile(r"(?:Z|z|[+-]00:?00)$")
# What ``scheduleAtUtc`` accepts, as the document states it: a calendar date, ``T``, a time,
# and UTC (``Z`` or a zero offset). 29 February of a common year matches and is refused (0911).
_DAY = (
    r"((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])"
    r"|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-9]))"
)
SCHEDULE_PATTERN = (
    r"^\s*([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-"
    + _DAY
    + r"[Tt]([01][0-9]|2[0-3]):[0-5][0-9]"
    r"(:[0-5][0-9](\.[0-9]{1,6})?)?(Z|z|[+-]00:?00)?\s*$"
)
NOT_BLANK: JsonDict = {"pattern": r"\S"}
# a label shown in a header (SIP From, an e-mail's Subject): no C0/C1 control character, no
# Unicode line or paragraph separator
LABEL_RE = re.compile(r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$")


class CallCreate(StrictInput):
    """POST /v1/calls (spec 2.2)."""

    # The validators below give each rule its own message; ``json_schema_extra`` states the
    # same rules in the OpenAPI document (docs/conformance.md).
    phone: str = Field(
        description="E.164, e.g. +14155550100", json_schema_extra={"pattern": E164_RE.pattern}
    )
    display_name: str | None = Field(
        default=None,
        max_length=128,
        description="Caller-ID label; no control characters or line breaks (it goes into a SIP "
        "header and the outcome e-mail's subject)",
        json_schema_extra={"pattern": LABEL_RE.pattern},
    )
    email: str = Field(max_length=254, json_schema_extra={"pattern": EMAIL_RE.pattern})
    system_prompt: str = Field(
        max_length=50_000, description="Plain text or a prompt slug", json_schema_extra=NOT_BLANK
    )
    api_key: str = Field(
        max_length=1024, description="AI engine API key; stored sealed", json_schema_extra=NOT_BLANK
    )
    model: str | None = Field(default=None, max_length=128)
    voice: str | None = Field(
        default=None,
        description="One of " + ", ".join(VOICES),
        json_schema_extra={"enum": [*VOICES, None]},
    )
    language: str | None = Field(
        default=None,
        max_length=35,
        description="Locale tag",
        json_schema_extra={"pattern": LOCALE_RE.pattern},
    )
    max_seconds: int = Field(default=300, ge=10, le=3600)
    retries: int = Field(default=0, ge=0, le=10)
    retry_delay_minutes: int = Field(default=5, ge=1, le=1440)
    schedule_at_utc: str | None = Field(
        default=None,
        description="ISO 8601 in UTC (`Z` or a zero offset), e.g. 2026-05-01T09:00:00Z",
        json_schema_extra={"pattern": SCHEDULE_PATTERN},
    )

    @field_validator("phone")
    @classmethod
    def _phone(cls, value: str) -> str:
        if not E164_RE.match(value):
            raise ValueError("must be an E.164 number such as +14155550100")
        return value

    @field_validator("email")
    @classmethod
    def _email(cls, value: str) -> str:
        if not EMAIL_RE.match(value):
            raise ValueError("must be an email address")
        return value

    @field_validator("system_prompt", "api_key")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("display_name", "model")
    @classmethod
    def _optional_text(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            return None
        return value

    @field_validator("display_name")
    @classmethod
    def _label(cls, value: str | None) -> str | None:
        if value is not None and not LABEL_RE.match(value):
            raise ValueError("must not hold control characters or line breaks")
        return value

    @field_validator("voice")
    @classmethod
    def _voice(cls, value: str | None) -> str | None:
        if value is not None and value not in VOICES:
            raise ValueError("must be one of " + ", ".join(VOICES))
        return value

    @field_validator("language")
    @classmethod
    def _language(cls, value: str | None) -> str | None:
        if value is not None and not LOCALE_RE.match(value):
            raise ValueError("must be a locale tag such as en-US")
        return value

    @field_validator("schedule_at_utc")
    @classmethod
    def _schedule(cls, value: str | None) -> str | None:
        if value is None:
            return None
        text = value.strip()
        try:
            parsed = parse_iso_utc(text)
        except ValueError:
            raise ValueError("must be ISO 8601 UTC, e.g. 2026-05-01T09:00:00Z") from None
        if "T" not in text.upper() or (
            re.search(r"[+-]\d\d:?\d\d$", text) and not UTC_SUFFIX_RE.search(text)
        ):
            raise ValueError("must be ISO 8601 UTC, e.g. 2026-05-01T09:00:00Z")
        return parsed.isoformat()

    def schedule_at(self) -> dt.datetime | None:
        return dt.datetime.fromisoformat(self.schedule_at_utc) if self.schedule_at_utc else None


class CallCreated(Schema):
    """Spec 2.3."""

    ok: bool
    call_id: str
    tenant: str
    whitelist_added: bool
    whitelist_error: str | None
    bridge_reply: str = Field(description="The media bridge's raw reply, as a string")


class CallRecord(Schema):
    """Spec 2.4."""

    call_id: str
    tenant: str
    requested_by: str
    phone: str
    display_name: str
    email: str
    voice: str
    language: str
    model: str
    status: str = one_of(STATUSES, "Spec 3.1")
    created_at_utc: str
    scheduled_for_utc: str | None
    dispatched_at_utc: str
    answered_at_utc: str
    ended_at_utc: str | None
    ended_reason: str = one_of(
        OUTCOMES,
        "The attempt's outcome (spec 6.3); empty while not ended and after a "
        "technical failure, which `errorDetail` describes",
    )
    duration_sec: int
    trunk_id: str
    transcript_path: str
    error_detail: str
    sip_status: int = Field(
        description="The final SIP status of the last attempt's INVITE (0 when none)"
    )
    attempt: int
    retries_left: int
    retry_delay_minutes: int


class HangupResult(Schema):
    """Spec 3.1 / 4.2; ``wasNoop`` is present (true) only when the call had already ended."""

    ok: bool
    call_id: str
    new_status: str = one_of(STATUSES)
    actor: str
    was_noop: bool | None = sometimes_absent("Present, and true, only when the call had ended")
