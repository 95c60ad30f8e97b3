"""The status machine's pure rules and the mapping of a call row to its wire shapes."""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

from switchboard.bridge.protocol import OUTCOMES, DialRequest
from switchboard.kit.errors import BadRequest
from switchboard.platform.calls.models import (
    CANCELLED,
    ENDED_FINAL,
    ENDED_SUCCESS,
    IN_FLIGHT,
    RETRY_PENDING,
    STATUSES,
    Call,
)
from switchboard.runtime import Runtime
from switchboard.tenants.config import TenantConfig

# What ``parse_statuses`` accepts, for the OpenAPI document: statuses separated by commas,
# blanks around them and empty parts ignored.
_ONE_STATUS = "(?:" + "|".join(STATUSES) + r")\s*"
STATUS_LIST_PATTERN = rf"^\s*(?:{_ONE_STATUS})?(?:,\s*(?:{_ONE_STATUS})?)*$"
ENDED_STATUSES = frozenset({ENDED_SUCCESS, ENDED_FINAL, CANCELLED})
SUCCESS_OUTCOMES = frozenset({"finished", "transferred-to-vnum", "max-duration"})
RETRY_OUTCOMES = frozenset({"no-answer"})
NUMBER_DOES_NOT_EXIST = frozenset({404, 484, 604})  # SIP statuses: never retried
# How long a callee may ring before the bridge must have reported the end of the attempt,
# on top of maxSeconds and the watchdog grace.
RING_ALLOWANCE_SEC = 60
SOURCE = "outbound-ai"


def new_call_id() -> str:
    return "oac-" + secrets.token_hex(6)


def status_after_attempt(
    *, outcome: str, error_detail: str, answered: bool, retries_left: int
) -> str:
    """The status machine's rule for an attempt that ended (docs/calls.md).

    Success: finished, transferred-to-vnum, max-duration (without a technical error). Retry,
    while retries remain: no-answer, and a technical failure before anyone answered (errorDetail
    filled, no outcome). Everything else is final.
    """
    if outcome in SUCCESS_OUTCOMES and not error_detail:
        return ENDED_SUCCESS
    retryable = outcome in RETRY_OUTCOMES or (not outcome and bool(error_detail) and not answered)
    if retryable and retries_left > 0:
        return RETRY_PENDING
    return ENDED_FINAL


def ended_reason(outcome: str, error_detail: str) -> str:
    """``endedReason`` of an ended attempt: its outcome, which is empty for a technical failure
    (``errorDetail`` then says what failed)."""
    del error_detail
    return outcome


def checked_outcome(outcome: str, error_detail: str) -> tuple[str, str]:
    """The reported outcome and error detail, kept inside the glossary (spec 6.3).

    A technical failure has no outcome: an outcome next to an error detail is dropped (the
    detail keeps it), an outcome outside the glossary becomes an error detail, and a report with
    neither is itself a technical failure.
    """
    if outcome and outcome not in OUTCOMES:
        extra = f"the bridge reported an outcome outside the glossary: {outcome[:60]!r}"
        return "", f"{error_detail}; {extra}" if error_detail else extra
    if outcome and error_detail:
        return "", f"{error_detail} (reported outcome: {outcome})"
    if not outcome and not error_detail:
        return "", "the bridge reported the end without an outcome"
    return outcome, error_detail


def parse_statuses(raw: str | None) -> list[str]:
    if not raw:
        return []
    wanted = [part.strip() for part in raw.split(",") if part.strip()]
    unknown = [s for s in wanted if s not in STATUSES]
    if unknown:
        raise BadRequest(
            f"status: unknown value(s) {', '.join(unknown)}; one of {', '.join(STATUSES)}"
        )
    return wanted


def _iso(value: dt.datetime | None) -> str | None:
    """A stored instant (always UTC, ``kit.models``' type) as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return None if value is None else value.isoformat(timespec="seconds")[:19] + "Z"


def record(values: tuple[Any, ...], tenant_name: str) -> dict[str, Any]:
    """The call record (spec 2.4, ``schemas.CallRecord``) as the JSON object it is sent as,
    from ``repository.RECORD_COLUMNS``' values; built directly, as a page holds up to 200."""
    (call_id, requested_by, phone, display_name, email, voice, language, model, status,
     created_at, scheduled_for, dispatched_at, answered_at, ended_at, ended_reason,
     duration_sec, trunk_id, transcript_path, error_detail, sip_status, attempt, retries_left,
     retry_delay_minutes) = values  # fmt: skip
    return {
        "callId": call_id,
        "tenant": tenant_name,
        "requestedBy": requested_by,
        "phone": phone,
        "displayName": display_name,
        "email": email,
        "voice": voice,
        "language": language,
        "model": model,
        "status": status,
        "createdAtUtc": _iso(created_at) or "",
        "scheduledForUtc": _iso(scheduled_for),
        "dispatchedAtUtc": _iso(dispatched_at) or "",
        "answeredAtUtc": _iso(answered_at) or "",
        "endedAtUtc": _iso(ended_at),
        "endedReason": ended_reason,
        "durationSec": duration_sec,
        "trunkId": trunk_id,
        "transcriptPath": transcript_path,
        "errorDetail": error_detail,
        "sipStatus": sip_status,
        "attempt": attempt,
        "retriesLeft": retries_left,
        "retryDelayMinutes": retry_delay_minutes,
    }


def dial_request(
    call: Call, *, tenant_name: str, config: TenantConfig, runtime: Runtime, callback_url: str
) -> DialRequest:
    """The dial of the call's current attempt. A systemPrompt naming one of the tenant's
    prompts (``Prompts:<slug>``) is sent as that prompt's text, read at every dial."""
    return DialRequest(
        call_id=call.call_id,
        attempt=call.attempt,
        tenant=tenant_name,
        phone=call.phone,
        display_name=call.display_name,
        trunk_ids=list(call.trunk_ids),
        voice=call.voice,
        language=call.language,
        model=call.model,
        max_seconds=call.max_seconds,
        system_prompt=config.prompt_text(runtime.box.open(call.system_prompt_sealed)),
        api_key=runtime.box.open(call.api_key_sealed),
        callback_url=callback_url,
        voicemail_message=config.voicemail_message,
    )


def in_flight_values(
    *, max_seconds: int, now: dt.datetime, runtime: Runtime, owner: str, reply: str
) -> dict[str, object]:
    """Columns of a call whose attempt the bridge accepted."""
    grace = runtime.settings.call_watchdog_grace_seconds
    return {
        "status": IN_FLIGHT,
        "attempt_open": True,
        "dispatched_at": now,
        "due_at": None,
        "lease_owner": owner,
        "lease_until": now + dt.timedelta(seconds=runtime.settings.call_lease_seconds),
        "deadline_at": now + dt.timedelta(seconds=max_seconds + RING_ALLOWANCE_SEC + grace),
        "bridge_reply": reply[:4000],
        "error_detail": "",
        "sip_status": 0,
        "dial_failures": 0,
    }
