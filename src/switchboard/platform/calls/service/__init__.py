"""Outbound call rules: creation, the status machine (docs/calls.md), hangup, bridge events.

Every transition is an atomic guarded UPDATE (``repository.guarded_update``) followed by the
events it causes, in the same transaction: a duplicate or late bridge event changes nothing and
emits nothing, and a rollback drops both.
"""

from switchboard.platform.calls.models import CANCELLED, ENDED_FINAL, ENDED_SUCCESS, STATUSES
from switchboard.platform.calls.service._create import create_call, get_call, hangup, list_calls
from switchboard.platform.calls.service._idempotency import (
    KEY_RE as IDEMPOTENCY_KEY_RE,
)
from switchboard.platform.calls.service._idempotency import IdempotencyKeyReused, place_call
from switchboard.platform.calls.service._outbound import (
    NotReady,
    apply_bridge_event,
    close_attempt,
)
from switchboard.platform.calls.service._rules import (
    ENDED_STATUSES,
    RETRY_OUTCOMES,
    RING_ALLOWANCE_SEC,
    SOURCE,
    STATUS_LIST_PATTERN,
    SUCCESS_OUTCOMES,
    dial_request,
    ended_reason,
    in_flight_values,
    new_call_id,
    parse_statuses,
    record,
    status_after_attempt,
)

__all__ = [
    "CANCELLED",
    "ENDED_FINAL",
    "ENDED_STATUSES",
    "ENDED_SUCCESS",
    "IDEMPOTENCY_KEY_RE",
    "RETRY_OUTCOMES",
    "RING_ALLOWANCE_SEC",
    "SOURCE",
    "STATUSES",
    "STATUS_LIST_PATTERN",
    "SUCCESS_OUTCOMES",
    "IdempotencyKeyReused",
    "NotReady",
    "apply_bridge_event",
    "close_attempt",
    "create_call",
    "dial_request",
    "ended_reason",
    "get_call",
    "hangup",
    "in_flight_values",
    "list_calls",
    "new_call_id",
    "parse_statuses",
    "place_call",
    "record",
    "status_after_attempt",
]
