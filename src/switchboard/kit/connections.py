"""What the database's connections do when they open and when a transaction begins.

SQLite's connections are set to WAL with foreign keys on, and their transactions begin
explicitly: writers take the write lock at BEGIN, readers keep a snapshot. PostgreSQL's
single-statement writes are held to one statement. ``Database`` (``kit/db.py``) attaches these
to its engines. ``GENERIC_PLANS`` is for the transactions of the workers' claims.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.pool import ConnectionPoolEntry

# PostgreSQL plans a prepared statement's first five runs on each connection with their values
# (custom plans), from the table's statistics; of a table not yet analyzed, or whose statistics
# predate what has fallen due, a claim's custom plan reads every due row and sorts them (50 ms a
# claim of 20,000 due deliveries, 31 ms of 100,000 due calls). A claim's plan made without the
# values reads its index in order and stops at the limit. Sent first in a claim's transaction,
# this makes its statements run that plan from their first run; it ends with the transaction
# (decision 0224).
GENERIC_PLANS = text("SET LOCAL plan_cache_mode = force_generic_plan")


def sqlite_pragmas(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    # The driver would open transactions lazily at the first write, so a read-then-write could
    # lose an update; SQLAlchemy emits our own BEGIN instead (see sqlite_begin).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def sqlite_reader_pragmas(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
    """A reader's connection (``Database.read``) refuses writes: SQLite enforces the promise."""
    sqlite_pragmas(dbapi_connection, record)
    dbapi_connection.execute("PRAGMA query_only=ON")


READ_ONLY = "switchboard_read_only"


def sqlite_begin(conn: Connection) -> None:
    """Writers take SQLite's write lock at BEGIN, so transactions never interleave a read and a
    write with another writer (no lost updates); read-only transactions keep a WAL snapshot."""
    read_only = conn.get_execution_options().get(READ_ONLY, False)
    conn.exec_driver_sql("BEGIN DEFERRED" if read_only else "BEGIN IMMEDIATE")


def begin_on_driver(statement: str) -> Callable[[Connection], None]:
    """``sqlite_begin`` for an engine whose transactions are all of one kind (the reader
    threads' and the writer thread's): the BEGIN goes straight to the ``sqlite3`` connection,
    about 20 us less a unit of work than a statement through SQLAlchemy's execution (it is then
    not echoed)."""

    def begin(conn: Connection) -> None:
        driver = conn.connection.dbapi_connection
        assert driver is not None
        driver.execute(statement)

    return begin


_STATEMENTS = "switchboard_statements"


def count_from_zero(conn: Connection) -> None:
    conn.info[_STATEMENTS] = 0


def one_statement(conn: Connection, *_: Any) -> None:
    """A single-statement write is atomic only while it is one statement."""
    count = conn.info.get(_STATEMENTS, 0) + 1
    if count > 1:
        raise RuntimeError("a single-statement write ran a second statement")
    conn.info[_STATEMENTS] = count
