"""Time is injected: production uses the system clock, tests a manual one."""

from __future__ import annotations

import datetime as dt
import time
from typing import Protocol

UTC = dt.UTC


class Clock(Protocol):
    def now(self) -> dt.datetime:
        """The current instant, timezone-aware UTC."""
        ...

    def timestamp(self) -> float:
        """The current instant as a Unix time (``now().timestamp()``, without the datetime)."""
        ...


class SystemClock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(UTC)

    def timestamp(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, start: dt.datetime | None = None) -> None:
        self._now = start or dt.datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def now(self) -> dt.datetime:
        return self._now

    def timestamp(self) -> float:
        return self._now.timestamp()

    def advance(self, seconds: float) -> None:
        self._now += dt.timedelta(seconds=seconds)

    def set(self, when: dt.datetime) -> None:
        self._now = when


def iso_utc(value: dt.datetime | None) -> str | None:
    """ISO 8601 UTC with a ``Z`` suffix and second precision, or None."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_iso_utc(text: str) -> dt.datetime:
    """Parse ISO 8601; a value without offset is taken as UTC. Raises ValueError."""
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+05:00 lies before year 1 in UTC
        raise ValueError(f"{text!r} lies outside the years 1 to 9999 in UTC") from None
