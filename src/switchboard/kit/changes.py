"""Whether the database may have changed: a version that moves with every committed write.

``Changes.version()`` is cheap enough to ask on every request (decision 0960). It is made of
what this process knows first hand and what it learns of every other writer:

- this process's commits: a counter bumped when a connection that wrote commits (before the
  COMMIT, and again once the connection is back in the pool, after it);
- on a SQLite file: ``PRAGMA data_version`` of a connection of our own, which SQLite moves when
  any other connection, of this process or another, commits to the file (a few microseconds, no
  I/O, so it is asked inline), once per turn of the event loop: the requests whose work runs in
  one turn were all received before it began, so the turn's first answer holds for every one
  of them, and a callback queued with it forgets it ahead of the next turn's work (decision
  0960);
- on PostgreSQL: a count of the notifications the database sends on channel
  ``switchboard_changes`` when any transaction that changed a row commits (a trigger on every
  table, ``NOTIFY_FUNCTION``, but the few marked ``kit.models.UNWATCHED``), received on a
  LISTEN connection; while that connection is down the version is ``None``, which means
  "unknown": nothing may be served on the strength of it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
import sqlite3
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import ConnectionPoolEntry

from switchboard.kit.listen import listen

CHANNEL = "switchboard_changes"
# Installed on every watched table of a PostgreSQL database (``Base`` metadata, migration 0014).
NOTIFY_FUNCTION = f"""
CREATE OR REPLACE FUNCTION switchboard_notify_change() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('{CHANNEL}', '');
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""
READ_ONLY_VERBS = frozenset(
    {"SELECT", "PRAGMA", "BEGIN", "SHOW", "SET", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"}
)
_WROTE = "switchboard_wrote"
_BUMP_ON_CHECKIN = "switchboard_bump_on_checkin"
CAUGHT_UP_SECONDS = 5.0


def notify_trigger_sql(table: str) -> list[str]:
    """The statements that make commits changing ``table`` notify ``CHANNEL`` (PostgreSQL)."""
    return [
        f"DROP TRIGGER IF EXISTS switchboard_changes ON {table}",
        f"CREATE TRIGGER switchboard_changes AFTER INSERT OR UPDATE OR DELETE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION switchboard_notify_change()",
        f"DROP TRIGGER IF EXISTS switchboard_truncated ON {table}",
        f"CREATE TRIGGER switchboard_truncated AFTER TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION switchboard_notify_change()",
    ]


def writes(statement: str) -> bool:
    """Whether ``statement`` may change rows: any verb but a read's (``SELECT ... FOR UPDATE``
    locks and changes nothing)."""
    verb = statement.lstrip()[:9].split(None, 1)
    return not verb or verb[0].upper() not in READ_ONLY_VERBS


class Changes:
    """The change version of one database, for one process."""

    def __init__(self, engine: AsyncEngine, url: str) -> None:
        self.generation = 0
        self._url = make_url(url)
        self._postgres = self._url.get_backend_name() == "postgresql"
        self._notified = 0
        self._listening: Any = None  # the LISTEN connection while it is up
        self._markers: dict[str, asyncio.Future[None]] = {}
        self._up = asyncio.Event()
        self._sqlite: sqlite3.Connection | None = None
        # The SQLite data version asked in the current turn of the loop ``_turn_loop``.
        self._turn_loop: asyncio.AbstractEventLoop | None = None
        self._turn_data = 0
        self._sqlite_path = (
            self._url.database
            if not self._postgres and self._url.database not in (None, "", ":memory:")
            else None
        )
        sync = engine.sync_engine
        event.listen(sync, "after_cursor_execute", self._after_execute)
        event.listen(sync, "commit", self._commit)
        event.listen(sync, "rollback", self._rollback)
        event.listen(sync.pool, "checkin", self._checkin)

    def version(self) -> tuple[int, int] | None:
        """A value that differs from every earlier one once a write committed; ``None`` when
        this process cannot currently tell (PostgreSQL without its LISTEN connection)."""
        if self._postgres:
            return (self.generation, self._notified) if self._listening is not None else None
        path = self._sqlite_path
        if path is None:
            return (self.generation, 0)
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # a thread, or before the loop: asked afresh, kept for nobody
            loop = None
        if loop is not None and self._turn_loop is loop:
            return (self.generation, self._turn_data)
        data = self._data_version(path)
        if data is None:
            return None
        if loop is not None:
            self._turn_loop, self._turn_data = loop, data
            loop.call_soon(self._turn_over)  # queued ahead of all the next turn brings
        return (self.generation, data)

    def _turn_over(self) -> None:
        self._turn_loop = None

    def _data_version(self, path: str) -> int | None:
        if self._sqlite is None:
            # No busy timeout: this runs on the event loop, which must never wait on a lock.
            self._sqlite = sqlite3.connect(
                path, timeout=0, check_same_thread=False, isolation_level=None
            )
        try:
            row = self._sqlite.execute("PRAGMA data_version").fetchone()
        except sqlite3.OperationalError:  # busy, or the file is gone: unknown, serve nothing
            return None
        return int(row[0])

    def bump(self) -> None:
        self.generation += 1

    async def listen(self, stop: asyncio.Event) -> None:
        """On PostgreSQL, keep a LISTEN connection until ``stop``; elsewhere return at once."""
        if not self._postgres:
            return
        url = self._url.render_as_string(hide_password=False)
        await listen(
            url,
            CHANNEL,
            self._notification,
            stop,
            on_up=self._listening_on,
            on_down=self._not_listening,
            name="change LISTEN",
        )

    def _listening_on(self, conn: Any) -> None:
        self.bump()  # what committed while nobody listened
        self._listening = conn
        self._up.set()

    def _not_listening(self) -> None:
        self._listening = None
        self._up.clear()

    async def caught_up(self) -> None:
        """Return once every notification committed before the call has been received (on
        PostgreSQL they arrive in commit order, so a marker sent now arrives after them); waits
        for the LISTEN connection if it is still being made."""
        if not self._postgres:
            return
        marker = secrets.token_hex(8)
        arrived = self._markers[marker] = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(CAUGHT_UP_SECONDS):
                await self._up.wait()
                await self._listening.execute(f"NOTIFY {CHANNEL}, '{marker}'")
                await arrived
        finally:
            del self._markers[marker]

    def close(self) -> None:
        self._turn_loop = None
        if self._sqlite is not None:
            self._sqlite.close()
            self._sqlite = None

    def _notification(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        if not payload:  # a change; a payload is a marker of ``caught_up``, of any process
            self._notified += 1
            return
        arrived = self._markers.get(payload)
        if arrived is not None and not arrived.done():
            arrived.set_result(None)

    def _after_execute(self, conn: Connection, _c: Any, statement: str, *_: Any) -> None:
        if writes(statement):
            conn.info[_WROTE] = True

    def _commit(self, conn: Connection) -> None:
        if conn.invalidated:  # its info is out of reach; bumping errs on the safe side
            self.bump()
            return
        if conn.info.pop(_WROTE, False):
            self.bump()
            conn.info[_BUMP_ON_CHECKIN] = True

    def _rollback(self, conn: Connection) -> None:
        # An invalidated connection (a cancelled or broken statement) cannot be asked for its
        # info before the rollback completes; its record starts afresh, and a flag left on it
        # costs at most one needless bump.
        if not conn.invalidated:
            conn.info.pop(_WROTE, None)

    def _checkin(self, _dbapi: Any, record: ConnectionPoolEntry) -> None:
        if record.info.pop(_BUMP_ON_CHECKIN, False):
            self.bump()


class Quiet:
    """What a polling worker learnt from its last look that found nothing to do: the change
    version read just before that look, and when the earliest thing it looks for falls due.
    Until the version moves or that time comes, another look would find nothing again, so the
    worker skips it (decision 0222): an idle process asks the database nothing between its
    upkeep passes, instead of a query every poll."""

    def __init__(self, changes: Changes) -> None:
        self._changes = changes
        self._looking: tuple[int, int] | None = None  # the version when the last look began
        self._version: tuple[int, int] | None = None
        self._due: dt.datetime | None = None

    def looking(self) -> None:
        """A look begins: call it before the look's first read."""
        self._looking = self._changes.version()

    def found_nothing(self, due: dt.datetime | None) -> None:
        """The last look found nothing due; ``due`` is when something will be (``None``:
        nothing is waiting)."""
        self._version, self._due = self._looking, due

    def forget(self) -> None:
        """The last look found work: the next one must run."""
        self._version = None

    def holds(self, now: dt.datetime) -> bool:
        """Whether a look now would find nothing again: nothing committed since the last empty
        look began (an unknown version never holds) and nothing has fallen due."""
        if self._version is None or (self._due is not None and now >= self._due):
            return False
        return self._changes.version() == self._version
