"""Subscriptions, the delivery outbox and the per-attempt delivery log."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ColumnElement,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    event,
    literal_column,
    text,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import InstrumentedAttribute, Mapped, mapped_column

from switchboard.kit.models import UNWATCHED, Base, JsonType, UtcDateTime

PENDING = "pending"
SUCCEEDED = "succeeded"
FAILED = "failed"
# Of the deliveries' pages on PostgreSQL: a page of rows that are all leased at once (a batch
# is oldest first, and rows are written in that order) keeps room for each one's new version.
FILLFACTOR = 50


def status_is(
    column: ColumnElement[str] | InstrumentedAttribute[str], status: str
) -> ColumnElement[bool]:
    """``column = '<status>'`` with the status written into the SQL, not bound: a partial
    index (below) serves a statement only if its condition shows the index's own literal."""
    return column == literal_column(f"'{status}'", String)


def _only(status: str) -> dict[str, Any]:
    """The keyword arguments of an index holding only the rows in ``status``."""
    where = text(f"status = '{status}'")
    return {"postgresql_where": where, "sqlite_where": where}


class Subscription(Base):
    """A receiver URL, the events it wants and its sealed HMAC secret."""

    __tablename__ = "webhook_subscriptions"
    __table_args__ = (Index("ix_webhook_subscriptions_tenant", "tenant_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(String(2048))
    events: Mapped[list[str]] = mapped_column(JsonType)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    secret_sealed: Mapped[str] = mapped_column(String(512))
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    created_by: Mapped[str] = mapped_column(String(128))
    last_fired_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, default=None)
    failures: Mapped[int] = mapped_column(Integer, default=0)

    def wants(self, event: str) -> bool:
        return "*" in self.events or event in self.events


class Delivery(Base):
    """One event for one subscription: the outbox row the sender claims with a lease.

    ``body`` is fixed when the event is emitted, so every attempt sends identical bytes.
    ``attempts`` counts finished attempts; the one in flight is ``attempts + 1``.
    ``order_key`` (the call id of call events) and ``seq`` (the event's id) order the
    deliveries of one call to one subscription: a delivery is not claimed while an earlier one
    of the same key is still pending (spec 6.2 rule 1).

    Pages are filled to half on PostgreSQL, so that taking a lease (which changes no indexed
    column) writes the row's new version beside the old one and no index entry (a HOT update);
    and commits to the table do not move the change version (decision 0217). The due index
    holds pending rows only and the replay index failed ones only, so a delivery that succeeds
    is written to neither (decision 0220); the order index holds every row, and serves the
    cascade when a subscription is deleted.
    """

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_due", "next_attempt_at", **_only(PENDING)),
        Index("ix_webhook_deliveries_failed", "subscription_id", "created_at", **_only(FAILED)),
        Index("ix_webhook_deliveries_order", "subscription_id", "order_key", "seq"),
        {**UNWATCHED, "postgresql_with": {"fillfactor": FILLFACTOR}},
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    subscription_id: Mapped[str] = mapped_column(
        ForeignKey("webhook_subscriptions.id", ondelete="CASCADE")
    )
    event: Mapped[str] = mapped_column(String(64))
    body: Mapped[bytes] = mapped_column(LargeBinary)
    status: Mapped[str] = mapped_column(String(16), default=PENDING)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    next_attempt_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    lease_token: Mapped[str | None] = mapped_column(String(32), default=None)
    lease_until: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, default=None)
    completed_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, default=None)
    last_status_code: Mapped[int | None] = mapped_column(Integer, default=None)
    last_error: Mapped[str | None] = mapped_column(String(200), default=None)
    order_key: Mapped[str | None] = mapped_column(String(64), default=None)
    seq: Mapped[int] = mapped_column(BigInteger, default=0)


class Attempt(Base):
    """One POST of a delivery: the delivery log operators read.

    The log holds no foreign key (decision 0221): the sender writes an attempt only while its
    delivery exists, deleting a subscription deletes its log (``LOG_GOES_WITH_SUBSCRIPTION``;
    a tenant's subscriptions go with the tenant), and the log is pruned by age. ``tenant_id``
    and ``subscription_id`` are copied from the delivery, for the log's tenant-scoped reads."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (Index("ix_webhook_attempts_subscription", "subscription_id", "id"), UNWATCHED)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(Integer)
    subscription_id: Mapped[str] = mapped_column(String(16))
    delivery_id: Mapped[str] = mapped_column(String(32))
    event: Mapped[str] = mapped_column(String(64))
    attempt: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    status_code: Mapped[int | None] = mapped_column(Integer, default=None)
    latency_ms: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(200), default=None)
    response_snippet: Mapped[str] = mapped_column(String(512), default="")


# Deleting a subscription (itself, or with its tenant) deletes its attempts: the log's one
# index leads with the subscription (decision 0221).
LOG_GOES_WITH_SUBSCRIPTION = {
    "postgresql": (
        "CREATE OR REPLACE FUNCTION switchboard_drop_webhook_log() RETURNS trigger AS $$ "
        "BEGIN DELETE FROM webhook_attempts WHERE subscription_id = OLD.id; RETURN NULL; END "
        "$$ LANGUAGE plpgsql",
        "DROP TRIGGER IF EXISTS switchboard_drop_log ON webhook_subscriptions",
        "CREATE TRIGGER switchboard_drop_log AFTER DELETE ON webhook_subscriptions "
        "FOR EACH ROW EXECUTE FUNCTION switchboard_drop_webhook_log()",
    ),
    "sqlite": (
        "DROP TRIGGER IF EXISTS switchboard_drop_log",
        "CREATE TRIGGER switchboard_drop_log AFTER DELETE ON webhook_subscriptions "
        "BEGIN DELETE FROM webhook_attempts WHERE subscription_id = OLD.id; END",
    ),
}


@event.listens_for(Subscription.__table__, "after_create")
def _log_goes_with_subscription(_target: Table, connection: Connection, **_: Any) -> None:
    for statement in LOG_GOES_WITH_SUBSCRIPTION.get(connection.dialect.name, ()):
        connection.exec_driver_sql(statement)
