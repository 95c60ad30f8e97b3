"""What every feature's tables are made of: the declarative base with its constraint naming
convention, and the column types the features share (aware UTC datetimes, JSON, ids never
given twice).

Tables made from the models notify committed changes on PostgreSQL, as migrated ones do
(``kit.changes``), but for the few marked ``UNWATCHED`` (decision 0217). How units of work run
on those tables is ``kit.db``'s.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, DateTime, MetaData, Table, event
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

from switchboard.kit.changes import NOTIFY_FUNCTION, notify_trigger_sql

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


@event.listens_for(Base.metadata, "after_create")
def _notify_changes(_target: MetaData, connection: Connection, **kw: Any) -> None:
    """Tables made from the models notify committed changes on PostgreSQL, as migrated ones do
    (revision 0014; ``kit.changes``)."""
    if connection.dialect.name != "postgresql":
        return
    connection.exec_driver_sql(NOTIFY_FUNCTION)
    for table in kw.get("tables", ()):
        if not watched(table):
            continue
        for statement in notify_trigger_sql(table.name):
            connection.exec_driver_sql(statement)


class UtcDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware UTC datetime on every backend (SQLite keeps naive UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; pass an aware UTC value")
        value = value.astimezone(dt.UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(
        self, value: dt.datetime | None, dialect: Dialect
    ) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


JsonType = JSON().with_variant(JSONB(), "postgresql")

# ``__table_args__`` of a table whose ids are never given twice: SQLite's AUTOINCREMENT (its
# plain rowid hands the largest id out again once that row is deleted); PostgreSQL's sequences
# never go back anyway. For ids that clients keep or other rows name without a foreign key
# (decision 0512).
IDS_NEVER_REUSED: dict[str, Any] = {"sqlite_autoincrement": True}

# ``__table_args__`` of a table whose commits do not notify the change version (decision 0217):
# the webhook sender's queue and log, written thousands of times a second under load. No answer
# the read cache keeps may depend on such a table (``tests/calls/test_read_cache.py``).
UNWATCHED: dict[str, Any] = {"info": {"watched": False}}


def watched(table: Table) -> bool:
    """Whether commits changing ``table`` move the change version (``kit.changes``)."""
    return bool(table.info.get("watched", True))
