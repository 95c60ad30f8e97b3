"""The engine and how units of work run on it: the one-transaction-per-request session.

SQLite is the embedded default; PostgreSQL is selected by a ``postgresql+asyncpg`` URL.
Services flush, never commit: the request (or task) that opened the session commits it.
``Database.read`` runs a read-only unit of work in one piece (docs/decisions/0950), and
``Database.write`` a write unit of work (docs/decisions/0209); ``Database.first`` and
``Database.insert`` run one statement, on PostgreSQL straight on the driver (decision 0999);
``read_on_driver`` and ``write_on_driver`` a unit of work whose statements go to the driver.
The tables' base and column types live in ``kit.models``.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from sqlalchemy import Insert, Select, create_engine, event, make_url, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import Session as SyncSession

from switchboard.kit.changes import Changes
from switchboard.kit.connections import (
    READ_ONLY,
    begin_on_driver,
    count_from_zero,
    one_statement,
    sqlite_begin,
    sqlite_pragmas,
    sqlite_reader_pragmas,
)
from switchboard.kit.driver import DriverStatements, Runner, Statements, in_session


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


AfterCommit = Callable[[], Awaitable[None] | None]
AFTER_COMMIT = "after_commit"
AFTER_END = "after_end"
T = TypeVar("T")
# PostgreSQL's connection pool: the connections kept open, and how many more a burst may open.
POOL_SIZE = 20
MAX_OVERFLOW = 20
# Threads that run SQLite's read-only units of work (``Database.read``), each with a connection
# of its own: WAL readers do not block each other or the writer.
SQLITE_READERS = 4


_HOLDING_WRITE_TURN: ContextVar[bool] = ContextVar("switchboard_write_turn", default=False)
BEGIN_ATTEMPTS = 5
# The most write units one SQLite transaction commits together (``Database.write``).
GROUP_MAX = 64
# A unit's outcome in a group: (True, what it returned) or (False, what it raised).
Outcome = tuple[bool, Any]
# A write unit waiting for the writer thread, and the future its caller awaits.
Queued = tuple[Callable[[SyncSession], Any], asyncio.Future[Any]]
log = logging.getLogger("switchboard.db")


class Database:
    """One engine and its session factory; owned by the application's lifespan."""

    def __init__(
        self,
        url: str,
        *,
        echo: bool = False,
        busy_timeout: float = 10.0,
        pool_size: int = POOL_SIZE,
    ) -> None:
        self.url = url
        kwargs: dict[str, Any] = {"echo": echo}
        if is_sqlite(url):
            kwargs["connect_args"] = {"timeout": busy_timeout}
        else:
            # ``pool_size`` connections stay open; beyond them up to MAX_OVERFLOW more are opened
            # for a burst and closed again as each is returned (decision 0993). No pre-ping: it
            # costs a round trip on every checkout (about 0.6 ms here). Stale connections are
            # recycled instead, and a dropped one is invalidated on first use.
            kwargs.update(pool_size=pool_size, max_overflow=MAX_OVERFLOW, pool_recycle=1800)
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        self._reader: Engine | None = None
        self._readers: ThreadPoolExecutor | None = None
        self._sync_writer: Engine | None = None
        self._write_thread: ThreadPoolExecutor | None = None
        # Write units waiting for the writer thread, and the task that runs them (SQLite).
        self._queued: list[Queued] = []
        self._committer: asyncio.Task[None] | None = None
        if is_sqlite(url):
            event.listen(self.engine.sync_engine, "connect", sqlite_pragmas)
            event.listen(self.engine.sync_engine, "begin", sqlite_begin)
            file = make_url(url)
            if file.database not in (None, "", ":memory:"):
                self._reader = create_engine(
                    file.set(drivername="sqlite"),
                    connect_args={"timeout": busy_timeout, "check_same_thread": False},
                    pool_size=SQLITE_READERS, max_overflow=0,
                ).execution_options(**{READ_ONLY: True})  # fmt: skip
                event.listen(self._reader, "connect", sqlite_reader_pragmas)
                event.listen(self._reader, "begin", begin_on_driver("BEGIN DEFERRED"))
                self._sync_writer = create_engine(
                    file.set(drivername="sqlite"),
                    connect_args={"timeout": busy_timeout, "check_same_thread": False},
                    pool_size=1, max_overflow=0,
                )  # fmt: skip
                event.listen(self._sync_writer, "connect", sqlite_pragmas)
                event.listen(self._sync_writer, "begin", begin_on_driver("BEGIN IMMEDIATE"))
        self.sessionmaker = async_sessionmaker(self.engine, expire_on_commit=False)
        # Read-only sessions carry the option on their engine, so they need not connect up front
        # (a request that reads nothing through its session costs no round trip).
        read_only = self.engine.execution_options(**{READ_ONLY: True})
        self.read_sessionmaker = async_sessionmaker(read_only, expire_on_commit=False)
        # PostgreSQL's units of work for ``read``: each statement on its own (decision 0992).
        self._statement_reads = None
        if not is_sqlite(url):
            read_only = self.engine.execution_options(
                isolation_level="AUTOCOMMIT", **{READ_ONLY: True}
            )
            self._statement_reads = async_sessionmaker(read_only, expire_on_commit=False)
        # The engine the sessions of ``read`` are bound to: a cache kept per engine and filled
        # inside ``read`` is looked up with it from outside.
        self.read_engine: Engine = self._reader or read_only.sync_engine
        # PostgreSQL's single-statement writes (``write(..., single=True)``): the statement is
        # its own transaction, without BEGIN and COMMIT (decision 0993).
        self._statement_writes: async_sessionmaker[AsyncSession] | None = None
        if not is_sqlite(url):
            single = self.engine.execution_options(isolation_level="AUTOCOMMIT")
            event.listen(single.sync_engine, "begin", count_from_zero)
            event.listen(single.sync_engine, "before_cursor_execute", one_statement)
            self._statement_writes = async_sessionmaker(single, expire_on_commit=False)
        self._writer = asyncio.Lock()
        self.changes = Changes(self.engine, url)
        # The hottest single statements, on the driver itself (decision 0999): on PostgreSQL
        # through the engine's pool; on a SQLite file on the reader threads and the writer.
        self._statements = Statements(self._reader.dialect if self._reader else self.engine.dialect)
        self._driver = (
            None
            if is_sqlite(url)
            else DriverStatements(self.engine, self._statements, self.changes)
        )

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    async def first(
        self, statement: Select[Any], params: Mapping[str, Any]
    ) -> tuple[Any, ...] | None:
        """The first row of one read statement, or None: a ``read`` of its own on SQLite; on
        PostgreSQL sent on the driver (``kit.driver``, decision 0999)."""
        if self._driver is not None:
            return await self._driver.first(statement, params)
        if self._reader is not None:  # on a reader thread, the statement on the driver
            compiled = self._statements.compile(statement)
            arguments = compiled.arguments(params)
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(
                self._reader_threads(), self._first_in_thread, compiled.sql, arguments
            )
            return None if found is None else compiled.row(found)

        def first(session: SyncSession) -> tuple[Any, ...] | None:
            row = session.connection().execute(statement, params).first()
            return None if row is None else tuple(row)

        return await self.read(first)

    async def insert(self, statement: Insert, values: Mapping[str, Any]) -> None:
        """One INSERT of ``values`` (a column left out takes its constant default) as a
        transaction of its own: a ``write`` on SQLite (grouped with others, decision 0996); on
        PostgreSQL sent on the driver (decision 0999)."""
        if self._driver is not None:
            await self._driver.insert(statement, values)
            return
        if self._sync_writer is not None:  # in a write unit, the statement on the driver
            compiled = self._statements.compile(statement, tuple(values))
            arguments = compiled.arguments(values)

            def on_driver(session: SyncSession) -> None:
                driver = session.connection().connection.driver_connection
                assert isinstance(driver, sqlite3.Connection)
                driver.execute(compiled.sql, arguments)

            await self.write(on_driver)  # moves SQLite's data version, as every write unit
            return

        def insert(session: SyncSession) -> None:
            session.connection().execute(statement, values)

        await self.write(insert, single=True)

    async def read_on_driver(self, work: Callable[[Runner], T]) -> T:
        """``read`` with ``work``'s statements sent on the driver (decision 0210); on
        PostgreSQL in a transaction of its own."""
        if self._driver is not None:
            return await self._driver.transaction(work)
        return await self.read(in_session(work, self._statements))

    async def write_on_driver(self, work: Callable[[Runner], T]) -> T:
        """``write`` with ``work``'s statements sent on the driver (decision 0210): on SQLite's
        writer thread (grouped like any write unit), on PostgreSQL in an asyncpg transaction."""
        if self._driver is not None:
            return await self._driver.transaction(work)
        return await self.write(in_session(work, self._statements))

    def _first_in_thread(self, sql: str, arguments: list[Any]) -> Any:
        assert self._reader is not None
        connection = self._reader.raw_connection()
        try:
            driver = connection.driver_connection
            assert isinstance(driver, sqlite3.Connection)
            return driver.execute(sql, arguments).fetchone()
        finally:
            connection.close()

    def _reader_threads(self) -> ThreadPoolExecutor:
        if self._readers is None:
            self._readers = ThreadPoolExecutor(SQLITE_READERS, "sqlite-read")
        return self._readers

    @asynccontextmanager
    async def transaction(self, *, read_only: bool = False) -> AsyncIterator[AsyncSession]:
        """One unit of work: commit on success, roll back on error, then run after-commit hooks.

        ``read_only`` is a hint for SQLite: such a transaction does not take the write lock up
        front (it may still write, without protection against a concurrent writer).
        """
        hooks: list[AfterCommit] = []
        try:
            if is_sqlite(self.url) and not read_only and not _HOLDING_WRITE_TURN.get():
                async with (
                    self._write_turn(),
                    self._session(read_only=False, hooks=hooks) as session,
                ):
                    yield session
            else:
                async with self._session(read_only=read_only, hooks=hooks) as session:
                    yield session
        finally:
            for hook in hooks:
                result = hook()
                if result is not None:
                    await result

    async def read(self, work: Callable[[SyncSession], T]) -> T:
        """Run ``work``, a unit of reads, and return what it returns.

        On SQLite the whole unit runs in one transaction (BEGIN, every statement and fetch,
        COMMIT) on a reader thread with its own connection, one hand-off for the unit of work:
        through aiosqlite each statement, fetch and cursor close is a hand-off of its own. On
        PostgreSQL ``work`` runs on the event loop through the async driver, each statement on
        its own without BEGIN and COMMIT: under READ COMMITTED a transaction would give its
        statements no common snapshot either, only two more round trips (decision 0992).
        ``work`` gets a synchronous session and must only read.
        """
        if self._statement_reads is not None:
            async with self._statement_reads() as session:
                return await session.run_sync(work)
        if self._reader is None:
            async with self.transaction(read_only=True) as session:
                return await session.run_sync(work)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._reader_threads(), self._read_in_thread, work)

    def _read_in_thread(self, work: Callable[[SyncSession], T]) -> T:
        assert self._reader is not None
        with SyncSession(self._reader, expire_on_commit=False) as session, session.begin():
            return work(session)

    async def write(self, work: Callable[[SyncSession], T], *, single: bool = False) -> T:
        """Run ``work`` in one write transaction and return what it returns.

        ``single``: ``work`` runs exactly one statement. On PostgreSQL that statement is then
        its own transaction, sent without BEGIN and COMMIT (two round trips fewer); a second
        statement is refused with RuntimeError (decision 0993). On SQLite it changes nothing.

        On SQLite the process's write turn is taken (decision 0900), then BEGIN IMMEDIATE, every
        statement and COMMIT run on the writer thread with a connection of its own: one hand-off
        for the unit of work instead of several per statement through aiosqlite. The units that
        queued while the writer was busy run together, each in a savepoint of one transaction,
        and commit together (decision 0996): a unit that raises is rolled back to its savepoint
        and raises to its caller alone; every caller returns once the commit is done. Elsewhere
        ``work`` runs on the event loop through the async driver. ``work`` gets a synchronous
        session; after-commit hooks are not run for it.
        """
        if single and self._statement_writes is not None:
            async with self._statement_writes() as session:
                result = await session.run_sync(work)
                await session.commit()  # sends nothing: its events tell ``Changes`` of the write
                return result
        if self._sync_writer is None:
            async with self.transaction() as session:
                return await session.run_sync(work)
        if self._write_thread is None:
            self._write_thread = ThreadPoolExecutor(1, "sqlite-write")
        loop = asyncio.get_running_loop()
        if _HOLDING_WRITE_TURN.get():
            return await loop.run_in_executor(self._write_thread, self._write_in_thread, work)
        done: asyncio.Future[T] = loop.create_future()
        self._queued.append((work, done))
        if self._committer is None or self._committer.done():
            self._committer = loop.create_task(self._commit_queued())
        # A caller cancelled while its unit waits for the turn takes it out of the queue (its
        # future is cancelled with it); once the unit's group runs, the unit completes anyway.
        return await done

    async def _commit_queued(self) -> None:
        """Run the queued write units, as many as queued while the writer was busy (at most
        GROUP_MAX), in one transaction per turn, and hand each caller its own outcome. The
        group is taken once the turn is held, so a caller cancelled until then is left out."""
        loop = asyncio.get_running_loop()
        group: list[Queued] = []
        try:
            while self._queued:
                async with self._write_turn():
                    waiting = [(work, done) for work, done in self._queued if not done.done()]
                    group, self._queued = waiting[:GROUP_MAX], waiting[GROUP_MAX:]
                    if not group:
                        break
                    try:
                        outcomes = await loop.run_in_executor(
                            self._write_thread,
                            self._write_group_in_thread,
                            [work for work, _ in group],
                        )
                    except Exception as exc:  # the transaction itself failed: every unit with it
                        outcomes = [(False, exc)] * len(group)
                    for (_, done), (ok, value) in zip(group, outcomes, strict=True):
                        if done.done():  # its caller was cancelled meanwhile
                            continue
                        if ok:
                            done.set_result(value)
                        else:
                            done.set_exception(value)
        except BaseException:  # this task was cancelled (the loop is closing): so are the callers
            for _, done in [*group, *self._queued]:
                done.cancel()
            self._queued = []
            raise
        finally:
            self._committer = None

    def _write_group_in_thread(self, works: list[Callable[[SyncSession], Any]]) -> list[Outcome]:
        """The units in one write transaction, each in a savepoint: a unit that raises leaves
        the others' writes (a single unit runs without a savepoint)."""
        if len(works) == 1:
            try:
                return [(True, self._write_in_thread(works[0]))]
            except Exception as exc:
                return [(False, exc)]

        def each_in_a_savepoint(session: SyncSession) -> list[Outcome]:
            outcomes: list[Outcome] = []
            for work in works:
                try:
                    with session.begin_nested():
                        outcomes.append((True, work(session)))
                except Exception as exc:
                    outcomes.append((False, exc))
            return outcomes

        return self._write_in_thread(each_in_a_savepoint)

    def _write_in_thread(self, work: Callable[[SyncSession], T]) -> T:
        """``work`` in one SQLite write transaction (rolled back if it raises); a BEGIN
        IMMEDIATE that outwaited the busy timeout is retried, as in ``_begin_sqlite``."""
        assert self._sync_writer is not None
        attempt = 0
        while True:
            with SyncSession(self._sync_writer, expire_on_commit=False) as session:
                try:
                    # BEGIN IMMEDIATE goes to the driver itself (``begin_on_driver``): its
                    # error arrives unwrapped.
                    session.connection()
                except (OperationalError, sqlite3.OperationalError) as exc:
                    attempt += 1
                    if "database is locked" not in str(exc) or attempt == BEGIN_ATTEMPTS:
                        raise
                    log.warning("SQLite stayed locked at BEGIN; retrying (%d)", attempt)
                    time.sleep(0.005 * attempt)
                    continue
                result = work(session)
                session.commit()
                return result

    @asynccontextmanager
    async def _write_turn(self) -> AsyncIterator[None]:
        """SQLite has one writer at a time: the process's writers queue here in FIFO order, so
        at most one of them waits on the database's lock (where waiting is polling, not a
        queue, and a busy process would starve the others' writers)."""
        async with self._writer:
            token = _HOLDING_WRITE_TURN.set(True)
            try:
                yield
            finally:
                _HOLDING_WRITE_TURN.reset(token)

    @asynccontextmanager
    async def _session(
        self, *, read_only: bool, hooks: list[AfterCommit]
    ) -> AsyncIterator[AsyncSession]:
        makers = self.read_sessionmaker if read_only else self.sessionmaker
        async with makers() as session:
            if is_sqlite(self.url) and not read_only:
                await self._begin_sqlite(session)
            try:
                yield session
                await session.commit()
            except Exception:
                await session.rollback()
                hooks.extend(session.info.pop(AFTER_END, []))
                raise
            except BaseException:  # cancelled: nothing more runs
                await session.rollback()
                raise
            hooks.extend(session.info.pop(AFTER_COMMIT, []))
            hooks.extend(session.info.pop(AFTER_END, []))

    async def _begin_sqlite(self, session: AsyncSession) -> None:
        """Begin now, so that a writer holds the lock before any work; a BEGIN IMMEDIATE that
        outwaited the busy timeout (another process's writers) is retried, which is safe
        because nothing has run in the transaction yet."""
        for attempt in range(BEGIN_ATTEMPTS):
            try:
                await session.connection()
                return
            except OperationalError as exc:
                if "database is locked" not in str(exc) or attempt == BEGIN_ATTEMPTS - 1:
                    raise
                await session.rollback()
                log.warning("SQLite stayed locked at BEGIN; retrying (%d)", attempt + 1)
                await asyncio.sleep(0.005 * (attempt + 1))

    async def answers(self) -> bool:
        """Whether the database answers a query, in a read-only transaction (on SQLite it takes
        no write lock, so a health check never waits behind or blocks a writer)."""
        try:
            async with self.transaction(read_only=True) as session:
                await session.execute(text("SELECT 1"))
        except Exception:  # any failure to answer is "no", never an error of the caller's
            return False
        return True

    async def dispose(self) -> None:
        committer = self._committer
        if committer is not None and committer.get_loop() is asyncio.get_running_loop():
            await committer  # the queued writes commit (or fail) before the engine goes
        await self.engine.dispose()
        self.changes.close()
        if self._readers is not None:
            self._readers.shutdown(wait=True)
            self._readers = None
        if self._reader is not None:
            self._reader.dispose()
        if self._write_thread is not None:
            self._write_thread.shutdown(wait=True)
            self._write_thread = None
        if self._sync_writer is not None:
            self._sync_writer.dispose()


def after_commit(session: AsyncSession, hook: AfterCommit) -> None:
    """Run ``hook`` once the session's transaction has committed (dropped on rollback)."""
    session.info.setdefault(AFTER_COMMIT, []).append(hook)


def after_end(session: AsyncSession, hook: AfterCommit) -> None:
    """Run ``hook`` once the session's transaction has ended, committed or rolled back by an
    error (not when the task is cancelled): for a record of its own that the request's outcome
    must not decide, such as a credential's last use."""
    session.info.setdefault(AFTER_END, []).append(hook)
