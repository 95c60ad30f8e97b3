"""The webhook history's retention: finished deliveries, their log and events older than the
retention period are deleted, a chunk of rows a transaction (decision 0225).

Each table is walked in the order its rows were written, from the oldest: by the integer key
the log and the events take from a sequence (SQLite's rowid), and by the rowid for the
deliveries on SQLite. Each step reads the next ``chunk`` keys, then deletes what is old among
them in a transaction of its own, so SQLite's single writer is held a chunk's work at a time,
never for a scan of the whole history. The write order follows the age (the log's
``started_at``, the events' and, on SQLite, the deliveries' ``created_at``), so the walk stops
at the first chunk that begins with a row too young to go: it reads what it deletes, what it
keeps among those rows (pending deliveries) and a chunk more. A row written out of order (an
attempt logged after a long POST) is left to the next prune.

PostgreSQL's deliveries have no key in write order (their ids are random): one statement deletes
them, reading the table once in its physical order. Writers do not wait for it there, as
SQLite's would.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    Table,
    bindparam,
    delete,
    literal_column,
    or_,
    select,
)
from sqlalchemy.sql.dml import ReturningDelete

from switchboard.kit.db import Database
from switchboard.kit.driver import Runner
from switchboard.kit.models import UtcDateTime
from switchboard.platform.events.models import Event
from switchboard.platform.webhooks.models import (
    FAILED,
    SUCCEEDED,
    Attempt,
    Delivery,
    status_is,
)

CHUNK = 1000  # rows a step reads and at most deletes


@dataclass(frozen=True, slots=True, eq=False)  # SQL expressions: compared by identity
class _Walk:
    """One table's prune: which rows are old enough to go and, where the table has a key in write
    order, that key and the age it follows (neither: one statement reads the table whole)."""

    table: Table
    old: ColumnElement[bool]
    key: ColumnElement[int] | None = None
    age: ColumnElement[dt.datetime] | None = None


@functools.cache  # built once: a walk is the key its statements are cached and compiled by
def _walks(*, postgres: bool) -> tuple[_Walk, ...]:
    before = bindparam("before", type_=UtcDateTime)
    attempts = cast(Table, Attempt.__table__)
    deliveries = cast(Table, Delivery.__table__)
    events = cast(Table, Event.__table__)
    status = deliveries.c.status
    done = or_(status_is(status, SUCCEEDED), status_is(status, FAILED))
    finished = done & (deliveries.c.completed_at < before)
    if postgres:
        by_write = _Walk(deliveries, finished)
    else:
        # A delivery is created before it finishes: created later than ``before``, it is young.
        rowid = literal_column("webhook_deliveries.rowid", Integer)
        by_write = _Walk(deliveries, finished, rowid, deliveries.c.created_at)
    started, created = attempts.c.started_at, events.c.created_at
    return (
        _Walk(attempts, started < before, attempts.c.id, started),
        by_write,
        _Walk(events, created < before, events.c.id, created),
    )


@functools.cache
def _statements(walk: _Walk) -> tuple[Select[int, dt.datetime], ReturningDelete[Any]]:
    """The next chunk's keys and ages after a key, and the old rows among them deleted."""
    assert walk.key is not None
    assert walk.age is not None
    after = walk.key > bindparam("after")
    chunk = select(walk.key, walk.age).where(after).order_by(walk.key).limit(bindparam("chunk"))
    gone = delete(walk.table).where(after, walk.key <= bindparam("last"), walk.old)
    return chunk, gone.returning(walk.key)


@functools.cache
def _whole(walk: _Walk) -> ReturningDelete[Any]:
    return delete(walk.table).where(walk.old).returning(*walk.table.primary_key.columns)


async def prune(db: Database, *, before: dt.datetime, chunk: int = CHUNK) -> int:
    """Delete finished deliveries, log entries and events older than ``before``; returns how
    many deliveries went. Pending deliveries stay, however old."""
    removed = {}
    for walk in _walks(postgres=db.dialect == "postgresql"):
        removed[walk.table.name] = await _prune(db, walk, before=before, chunk=chunk)
    return removed["webhook_deliveries"]


async def _prune(db: Database, walk: _Walk, *, before: dt.datetime, chunk: int) -> int:
    """Delete ``walk``'s old rows, a chunk a transaction; returns how many went."""
    if walk.key is None:
        whole = functools.partial(_rows, _whole(walk), {"before": before})
        return len(await db.write_on_driver(whole))
    next_rows, gone = _statements(walk)
    after, removed = 0, 0  # keys start above 0
    while True:
        read = {"after": after, "chunk": chunk}
        rows = await db.read_on_driver(functools.partial(_rows, next_rows, read))
        if not rows or rows[0][1] >= before:
            return removed  # the end, or from here on the rows are younger
        span = {"after": after, "last": rows[-1][0], "before": before}
        removed += len(await db.write_on_driver(functools.partial(_rows, gone, span)))
        if len(rows) < chunk:
            return removed
        after = rows[-1][0]


def _rows(statement: Any, params: dict[str, Any], runner: Runner) -> list[tuple[Any, ...]]:
    return runner.rows(statement, params)
