from __future__ import annotations

from pydantic import Field

from switchboard.kit.clock import iso_utc
from switchboard.kit.schemas import Schema, one_of
from switchboard.platform.events.catalogue import ALL_EVENTS
from switchboard.platform.webhooks.models import Subscription
from switchboard.platform.webhooks.service import ALL


class WebhookItem(Schema):
    """A subscription as the REST view shows it (spec 2.10); the secret is never included."""

    id: str = Field(description="16 hex characters")
    url: str = Field(description="Receiver endpoint")
    events: list[str] = one_of((ALL, *ALL_EVENTS), 'Event names, or ["*"] for all')
    active: bool = Field(description="False after auto-pause (20 consecutive failures)")
    created_at_utc: str
    created_by: str
    last_fired_utc: str | None = Field(description="Time of the latest delivery attempt")
    failures: int = Field(description="Consecutive failed deliveries")

    @classmethod
    def of(cls, row: Subscription) -> WebhookItem:
        return cls(
            id=row.id,
            url=row.url,
            events=list(row.events),
            active=row.active,
            created_at_utc=iso_utc(row.created_at) or "",
            created_by=row.created_by,
            last_fired_utc=iso_utc(row.last_fired_at),
            failures=row.failures,
        )
