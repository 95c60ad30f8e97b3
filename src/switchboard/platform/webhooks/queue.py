"""The sender's SQL: claiming and completing the deliveries of every tenant.

Cross-tenant by nature: these statements serve every tenant's outbox and never reach an API
caller (the tenant-facing reads are in ``repository.py``). They run through a ``Runner``, which
sends them on the driver (decision 0210): each is built once per backend with named parameters,
and compiled once.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import orjson
from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    String,
    Table,
    Update,
    and_,
    any_,
    bindparam,
    case,
    func,
    literal_column,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session
from sqlalchemy.sql.expression import type_coerce
from sqlalchemy.types import TypeDecorator

from switchboard.kit.connections import GENERIC_PLANS
from switchboard.kit.driver import Runner
from switchboard.kit.models import UtcDateTime
from switchboard.platform.webhooks.models import (
    FAILED,
    PENDING,
    Attempt,
    Delivery,
    Subscription,
    status_is,
)

_deliveries_table = cast(Table, Delivery.__table__)
_attempts_table = cast(Table, Attempt.__table__)
_subscriptions_table = cast(Table, Subscription.__table__)


def _listed(column: ColumnElement[str], key: str, *, postgres: bool) -> Any:
    """``column IN :key`` with the values as one parameter: a PostgreSQL array (``= ANY``), a
    JSON array on SQLite (``IN (SELECT value FROM json_each(...))``, which still reaches rows
    by their key). One statement text for any count (asyncpg reuses its prepared statement),
    and nothing to render per value on every execution as an expanding ``IN (...)`` does."""
    if postgres:
        return column == any_(bindparam(key, type_=ARRAY(String)))
    listed = bindparam(key, type_=_JsonList())
    return column.in_(select(func.json_each(listed).table_valued("value")))


class _JsonList(TypeDecorator[list[str]]):
    """A list of strings bound as one JSON array (SQLite's ``json_each`` reads it)."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: list[str] | None, dialect: Dialect) -> str | None:
        return None if value is None else orjson.dumps(list(value)).decode()


@functools.cache
def _fail_pending_statement() -> Update:
    d = _deliveries_table
    return (
        update(d)
        .where(d.c.subscription_id == bindparam("b_subscription"), d.c.status == PENDING)
        .values(
            status=FAILED,
            completed_at=bindparam("b_now", type_=UtcDateTime),
            lease_token=None,
            lease_until=None,
            last_error=bindparam("b_reason", type_=String),
        )
    )


def fail_pending(runner: Runner, subscription_id: str, *, now: dt.datetime, reason: str) -> None:
    """Finish every queued delivery of a paused or deleted subscription as failed."""
    params = {"b_subscription": subscription_id, "b_now": now, "b_reason": reason}
    runner.execute(_fail_pending_statement(), params)


@dataclass(frozen=True, slots=True)
class Claimed:
    """A delivery leased to one sender, with what sending it needs."""

    id: str
    token: str
    tenant_id: int
    subscription_id: str
    event: str
    body: bytes
    attempt: int
    url: str
    secret_sealed: str
    active: bool
    until: dt.datetime  # when the lease runs out


def _not_blocked() -> Any:
    """No earlier delivery of the same call to the same subscription is still pending."""
    d = _deliveries_table
    earlier = d.alias("earlier")
    blocked = (
        select(earlier.c.id)
        .where(
            earlier.c.subscription_id == d.c.subscription_id,
            earlier.c.order_key == d.c.order_key,
            # Not through the due index (pending rows by time): statistics taken while little
            # was pending make PostgreSQL walk every pending row there for each candidate
            # (seconds a claim once a backlog builds); the call's own rows are few.
            (earlier.c.status + "") == PENDING,
            earlier.c.seq < d.c.seq,
        )
        .exists()
    )
    return or_(d.c.order_key.is_(None), ~blocked)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A due, unleased delivery and the subscription it goes to, read before leasing."""

    id: str
    subscription_id: str
    url: str
    secret_sealed: str
    active: bool
    place: Any = None  # on PostgreSQL, where the locked row is (its ``ctid``)


@functools.cache
def _due_statement(*, excluding: bool, postgres: bool) -> Select[Any]:
    """Built once per shape (building it costs more than running it). On
    PostgreSQL the rows are locked as read, skipping those another sender holds, and each
    row's place is read with it for the lease.

    The oldest are read in the order of the due index (pending rows by ``next_attempt_at``)
    and the scan stops at the limit, whatever the statistics say of how many are pending
    (decisions 0216 and 0220). Their subscriptions are read apart, once a claim (decision
    0223): joined here, each row would carry its subscription's URL and sealed secret, a
    kilobyte sorted and sent a row."""
    d = _deliveries_table
    now = bindparam("now", type_=UtcDateTime)
    columns: list[Any] = [d.c.id, d.c.subscription_id]
    if postgres:
        columns.append(literal_column("webhook_deliveries.ctid"))
    due = (
        select(*columns)
        .where(
            status_is(d.c.status, PENDING),
            d.c.next_attempt_at <= now,
            or_(d.c.lease_until.is_(None), d.c.lease_until < now),
            _not_blocked(),
        )
        .order_by(d.c.next_attempt_at)
        .limit(bindparam("limit", type_=Integer))
    )
    if excluding:
        due = due.where(~_listed(d.c.subscription_id, "exclude", postgres=postgres))
    if postgres:
        due = due.with_for_update(skip_locked=True, of=d)
    return due


@functools.cache
def _subscriptions_statement(*, postgres: bool) -> Select[Any]:
    s = _subscriptions_table
    return select(s.c.id, s.c.url, s.c.secret_sealed, s.c.active).where(
        _listed(s.c.id, "ids", postgres=postgres)
    )


def due_candidates(
    runner: Runner,
    *,
    now: dt.datetime,
    limit: int,
    exclude: Sequence[str],
) -> list[Candidate]:
    """Due, unleased deliveries, oldest first, with their subscription's current state. On
    PostgreSQL the rest of the transaction runs generic plans (``GENERIC_PLANS``)."""
    stmt = _due_statement(excluding=bool(exclude), postgres=runner.postgres)
    if runner.postgres:
        runner.execute(GENERIC_PLANS, {})
    params: dict[str, Any] = {"now": now, "limit": limit}
    if exclude:
        params["exclude"] = list(exclude)
    due = runner.rows(stmt, params)
    if not due:
        return []
    ids = list({row[1]: None for row in due})
    subscriptions = {
        row[0]: row[1:]
        for row in runner.rows(_subscriptions_statement(postgres=runner.postgres), {"ids": ids})
    }
    return [
        Candidate(row[0], row[1], *sub, *row[2:])
        for row in due
        if (sub := subscriptions.get(row[1])) is not None
    ]


# What a lease reads back of each row it takes, by either statement below (``lease`` reads
# the rows in this order).
_LEASED = tuple(
    _deliveries_table.c[name] for name in ("id", "tenant_id", "event", "body", "attempts")
)


@functools.cache
def _lease_statement() -> Update:
    """SQLite: the candidates were read in another transaction, so each is leased only if it
    is still due and unleased."""
    d = _deliveries_table
    now = bindparam("b_now", type_=UtcDateTime)
    return (
        update(d)
        .where(
            _listed(d.c.id, "ids", postgres=False),
            # Not through the due index (pending rows by time), which SQLite would otherwise
            # pick and walk every pending row for: the ids reach each row by its key.
            (d.c.status + "") == PENDING,
            or_(d.c.lease_until.is_(None), d.c.lease_until < now),
        )
        .values(
            lease_token=bindparam("b_token", type_=String),
            lease_until=bindparam("b_until", type_=UtcDateTime),
        )
        .returning(*_LEASED)
    )


# PostgreSQL: the rows this transaction has just read and locked, reached where they lie
# rather than through the key's index again; locked, they are still as read (decision 0223).
_LEASE_LOCKED = (
    text(
        """
        UPDATE webhook_deliveries SET lease_token = :b_token, lease_until = :b_until
        WHERE ctid = ANY(CAST(:places AS TID[]))
        RETURNING id, tenant_id, event, body, attempts
        """
    )
    .bindparams(bindparam("b_until", type_=UtcDateTime))
    .columns(*_LEASED)
)


def lease(
    runner: Runner,
    candidates: Sequence[Candidate],
    *,
    now: dt.datetime,
    until: dt.datetime,
    token: str,
) -> list[Claimed]:
    """Lease ``candidates`` still due and unleased (a conditional UPDATE: one winner per row;
    on PostgreSQL the rows locked when read) and read what sending them needs in the same
    statement; in the candidates' order."""
    if not candidates:
        return []
    if runner.postgres:
        places = [c.place for c in candidates]
        params: dict[str, Any] = {"places": places, "b_token": token, "b_until": until}
        rows = runner.rows(_LEASE_LOCKED, params)
    else:
        ids = [c.id for c in candidates]
        params = {"ids": ids, "b_now": now, "b_token": token, "b_until": until}
        rows = runner.rows(_lease_statement(), params)
    won = {row[0]: row for row in rows}
    return [
        Claimed(
            id=c.id,
            token=token,
            tenant_id=r[1],
            subscription_id=c.subscription_id,
            event=r[2],
            body=r[3],
            attempt=r[4] + 1,
            url=c.url,
            secret_sealed=c.secret_sealed,
            active=c.active,
            until=until,
        )
        for c in candidates
        if (r := won.get(c.id)) is not None
    ]


@functools.cache
def _release_statement(*, postgres: bool) -> Update:
    d = _deliveries_table
    return (
        update(d)
        .where(_listed(d.c.id, "ids", postgres=postgres), d.c.lease_token == bindparam("b_token"))
        .values(lease_token=None, lease_until=None)
    )


def release(runner: Runner, *, items: Sequence[Claimed]) -> None:
    """Give back the leases of ``items`` (leased, never sent) that their tokens still hold."""
    by_token: dict[str, list[str]] = {}
    for item in items:
        by_token.setdefault(item.token, []).append(item.id)
    stmt = _release_statement(postgres=runner.postgres)
    for token, ids in by_token.items():
        runner.execute(stmt, {"ids": ids, "b_token": token})


def next_due(session: Session) -> dt.datetime | None:
    """When the earliest pending delivery becomes claimable (its lease may hold it)."""
    d = _deliveries_table
    effective = func.coalesce(d.c.lease_until, d.c.next_attempt_at)
    # A delivery waiting for an earlier one of its call is not due: the earlier one's time is.
    stmt = select(type_coerce(func.min(effective), UtcDateTime)).where(
        status_is(d.c.status, PENDING), _not_blocked()
    )
    return cast("dt.datetime | None", session.scalar(stmt))


# What an attempt's log row takes from the sender; its tenant, subscription and event come
# from the delivery row, read as the statement checks that the delivery still exists.
_ATTEMPT_COLUMNS = (
    "delivery_id",
    "attempt",
    "started_at",
    "status_code",
    "latency_ms",
    "error",
    "response_snippet",
)
# An attempt is logged only while its delivery exists: the log has no foreign key (decision
# 0221), and a subscription deleted while its delivery was in flight has taken its log along.
# On SQLite the batch is one JSON array read by ``json_each`` in one statement: run once per
# row (``executemany``), the same log cost the sender's writer 4-14 us more a delivery
# (docs/benchmarks/webhooks.md). ``CROSS JOIN`` keeps the array the outer loop, so each
# delivery is found by its key and the log's ids follow the batch's order.
_INSERT_ATTEMPTS_JSON = text(
    """
    INSERT INTO webhook_attempts (tenant_id, subscription_id, event, delivery_id, attempt,
        started_at, status_code, latency_ms, error, response_snippet)
    SELECT d.tenant_id, d.subscription_id, d.event, json_extract(a.value, '$[0]'),
        json_extract(a.value, '$[1]'), json_extract(a.value, '$[2]'),
        json_extract(a.value, '$[3]'), json_extract(a.value, '$[4]'),
        json_extract(a.value, '$[5]'), json_extract(a.value, '$[6]')
    FROM json_each(:rows) AS a CROSS JOIN webhook_deliveries AS d
    WHERE d.id = json_extract(a.value, '$[0]')
    """
)
# ``started_at`` as SQLite stores a ``UtcDateTime`` (naive UTC text), made by the type itself.
_SQLITE = sqlite.dialect()
_sqlite_time = cast(
    "Callable[[dt.datetime], str]", UtcDateTime().dialect_impl(_SQLITE).bind_processor(_SQLITE)
)


def _sqlite_attempt(row: dict[str, Any]) -> tuple[Any, ...]:
    """One attempt as an element of ``_INSERT_ATTEMPTS_JSON``'s array (``_ATTEMPT_COLUMNS``)."""
    return (
        row["delivery_id"],
        row["attempt"],
        _sqlite_time(row["started_at"]),
        row["status_code"],
        row["latency_ms"],
        row["error"],
        row["response_snippet"],
    )


# One statement text whatever the batch size, so PostgreSQL reuses one prepared statement
# (a multi-row VALUES list would be a new statement for every batch size).
_INSERT_ATTEMPTS_UNNEST = text(
    """
    INSERT INTO webhook_attempts (tenant_id, subscription_id, event, delivery_id, attempt,
        started_at, status_code, latency_ms, error, response_snippet)
    SELECT d.tenant_id, d.subscription_id, d.event, a.*
    FROM unnest(CAST(:delivery_id AS VARCHAR[]), CAST(:attempt AS INTEGER[]),
        CAST(:started_at AS TIMESTAMPTZ[]), CAST(:status_code AS INTEGER[]),
        CAST(:latency_ms AS INTEGER[]), CAST(:error AS VARCHAR[]),
        CAST(:response_snippet AS VARCHAR[]))
        AS a(delivery_id, attempt, started_at, status_code, latency_ms, error,
            response_snippet)
    JOIN webhook_deliveries AS d ON d.id = a.delivery_id
    """
)


def record_attempts(runner: Runner, rows: Sequence[dict[str, Any]]) -> None:
    """Log the attempts of deliveries that still exist. Run it after ``finish_deliveries`` in
    the same transaction: the outcomes' ``UPDATE`` holds the delivery rows, so a subscription
    deleted meanwhile either waits for this transaction, and its trigger then deletes these
    attempts, or was deleted before, and this statement sees its deliveries gone."""
    if not rows:
        return
    if runner.postgres:
        columns = {name: [row[name] for row in rows] for name in _ATTEMPT_COLUMNS}
        runner.execute(_INSERT_ATTEMPTS_UNNEST, columns)
        return
    batch = orjson.dumps([_sqlite_attempt(row) for row in rows]).decode()
    runner.execute(_INSERT_ATTEMPTS_JSON, {"rows": batch})


@functools.cache
def _finish_statement(*, postgres: bool) -> Update:
    t = _deliveries_table
    return (
        update(t)
        .where(_listed(t.c.id, "ids", postgres=postgres), t.c.lease_token == bindparam("b_token"))
        .values(
            status=bindparam("b_status", type_=String),
            attempts=bindparam("b_attempts", type_=Integer),
            next_attempt_at=bindparam("b_next", type_=UtcDateTime),
            completed_at=bindparam("b_completed", type_=UtcDateTime),
            last_status_code=bindparam("b_code", type_=Integer),
            last_error=bindparam("b_error", type_=String),
            lease_token=None,
            lease_until=None,
        )
    )


def finish_deliveries(runner: Runner, rows: Sequence[dict[str, Any]]) -> None:
    """Apply outcomes; a row whose lease was lost (token changed) is left alone.

    Rows with the same outcome (a batch of successes, typically) are written by one
    ``UPDATE ... WHERE id IN (...)``: one statement and one parameter set per group rather
    than per row."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for row in rows:
        key = tuple(row[name] for name in _OUTCOME_COLUMNS)
        groups.setdefault(key, []).append(row["b_id"])
    stmt = _finish_statement(postgres=runner.postgres)
    for key, ids in groups.items():
        params: dict[str, Any] = dict(zip(_OUTCOME_COLUMNS, key, strict=True))
        params["ids"] = ids
        runner.execute(stmt, params)


_OUTCOME_COLUMNS = (
    "b_token",
    "b_status",
    "b_attempts",
    "b_next",
    "b_completed",
    "b_code",
    "b_error",
)


@functools.cache
def _touch_statement(*, resetting: bool, postgres: bool) -> Update:
    t = _subscriptions_table
    values: dict[str, Any] = {"last_fired_at": bindparam("b_now", type_=UtcDateTime)}
    if resetting:
        reset = and_(_listed(t.c.id, "succeeded", postgres=postgres), t.c.active.is_(True))
        values["failures"] = case((reset, 0), else_=t.c.failures)
    return update(t).where(_listed(t.c.id, "fired", postgres=postgres)).values(**values)


def touch(
    runner: Runner, *, fired: Sequence[str], succeeded: Sequence[str], now: dt.datetime
) -> None:
    """Stamp ``lastFiredUtc`` of ``fired`` and, in the same statement, clear the failure
    tally of those in ``succeeded`` (a subset) that are active."""
    if not fired:
        return
    params: dict[str, Any] = {"fired": list(fired), "b_now": now}
    if succeeded:
        params["succeeded"] = list(succeeded)
    stmt = _touch_statement(resetting=bool(succeeded), postgres=runner.postgres)
    runner.execute(stmt, params)


@functools.cache
def _count_failures_statement(*, reset_first: bool) -> Update:
    t = _subscriptions_table
    count = bindparam("b_count", type_=Integer)
    return (
        update(t)
        .where(t.c.id == bindparam("b_id"), t.c.active.is_(True))
        .values(failures=count if reset_first else t.c.failures + count)
        .returning(t.c.failures)
    )


@functools.cache
def _pause_statement() -> Update:
    t = _subscriptions_table
    return (
        update(t)
        .where(t.c.id == bindparam("b_id"))
        .values(active=False, failures=bindparam("b_pause", type_=Integer))
    )


def add_failures(
    runner: Runner, subscription_id: str, *, count: int, reset_first: bool, pause_at: int
) -> bool:
    """Count ``count`` more consecutive failed deliveries (after a success when
    ``reset_first``); returns True when this pauses the subscription."""
    stmt = _count_failures_statement(reset_first=reset_first)
    rows = runner.rows(stmt, {"b_id": subscription_id, "b_count": count})
    if not rows or rows[0][0] < pause_at:
        return False
    runner.execute(_pause_statement(), {"b_id": subscription_id, "b_pause": pause_at})
    return True
