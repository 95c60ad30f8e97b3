"""What a batch of finished attempts writes back: the attempt log, each delivery's outcome and
the subscriptions' tallies (retries and their delays, final failures, decision 0203)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from switchboard.platform.webhooks import service
from switchboard.platform.webhooks.models import FAILED, PENDING, SUCCEEDED
from switchboard.platform.webhooks.queue import Claimed


@dataclass(slots=True)
class Outcome:
    claimed: Claimed
    started_at: dt.datetime
    status_code: int | None = None
    latency_ms: int = 0
    error: str | None = None
    snippet: str = ""
    sent: bool = True

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@dataclass(slots=True)
class Writes:
    """What a batch of finished attempts writes back: attempt log rows, delivery outcomes and
    per-subscription tallies (subscription -> (a success came first in the batch, final
    failures after it))."""

    now: dt.datetime
    attempts: list[dict[str, Any]] = field(default_factory=list)
    finished: list[dict[str, Any]] = field(default_factory=list)
    fired: set[str] = field(default_factory=set)
    succeeded: set[str] = field(default_factory=set)
    failures: dict[str, tuple[bool, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, done: list[Outcome], *, now: dt.datetime, delays: tuple[float, ...]) -> Writes:
        w = cls(now)
        for o in done:
            c = o.claimed
            if o.sent:
                w.fired.add(c.subscription_id)
            if not o.sent:
                status, next_at = FAILED, now
            elif o.ok:
                status, next_at = SUCCEEDED, now
                w.succeeded.add(c.subscription_id)
                w.failures.pop(c.subscription_id, None)
            elif c.attempt < service.MAX_ATTEMPTS:
                delay = delays[min(c.attempt - 1, len(delays) - 1)]
                status, next_at = PENDING, now + dt.timedelta(seconds=delay)
            else:
                status, next_at = FAILED, now
                reset, count = w.failures.get(c.subscription_id, (False, 0))
                w.failures[c.subscription_id] = (
                    reset or c.subscription_id in w.succeeded,
                    count + 1,
                )
            w.finished.append(
                {
                    "b_id": c.id,
                    "b_token": c.token,
                    "b_status": status,
                    "b_attempts": c.attempt if o.sent else c.attempt - 1,
                    "b_next": next_at,
                    "b_completed": None if status == PENDING else now,
                    "b_code": o.status_code,
                    "b_error": o.error,
                }
            )
            if o.sent:
                w.attempts.append(
                    {
                        "delivery_id": c.id,
                        "attempt": min(c.attempt, service.MAX_ATTEMPTS),
                        "started_at": o.started_at,
                        "status_code": o.status_code,
                        "latency_ms": o.latency_ms,
                        "error": o.error,
                        "response_snippet": o.snippet,
                    }
                )
        return w
