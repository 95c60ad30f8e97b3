"""Single statements sent straight to the driver, for the hottest paths (decision 0999).

A statement run through a session costs about 290 us of CPU on the reference machine, of which
asyncpg's own part is under 60 us: the session, its connection object, the execution context
and the result set cost the rest. ``DriverStatements`` compiles each SQLAlchemy statement once
for the engine's dialect (its SQL, the order of its parameters, the type processing of each
parameter and column) and then runs it on a pooled asyncpg connection, taken from and returned
to the engine's own pool: about 110 us. ``Statements`` is the compiling half, which
``Database`` also uses for SQLite's threads (their connections are ``sqlite3``'s own).

``first`` and ``insert`` are each their own transaction (asyncpg outside a transaction), as the
platform's other single-statement reads and writes on PostgreSQL are (decisions 0992 and 0993).
``transaction`` runs a synchronous unit of work whose statements go through a ``Runner``, in one
transaction on one connection (decision 0210); ``SqliteRunner`` is the same for a ``sqlite3``
connection. A write moves the process's change version (``Changes``) as a committed session
write does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

import asyncpg
from sqlalchemy import Insert, Select
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.orm import Session
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement
from sqlalchemy.util import await_, greenlet_spawn

from switchboard.kit.changes import Changes, writes

Processor = Callable[[Any], Any] | None
T = TypeVar("T")
# What a constraint refused raises, through a session or on either driver.
INTEGRITY_ERRORS: tuple[type[Exception], ...] = (
    IntegrityError,
    sqlite3.IntegrityError,
    asyncpg.IntegrityConstraintViolationError,
)


@dataclass(frozen=True, slots=True)
class Compiled:
    """A statement as the driver takes it: its SQL and how to order and convert values."""

    sql: str
    names: tuple[str, ...]  # the parameters, in the order of $1, $2, ...
    binds: tuple[Processor, ...]  # one per parameter
    # Values of the parameters a caller may leave out: an INSERT's scalar column defaults and
    # the literals written into the statement (``status == 'pending'``).
    defaults: Mapping[str, Any]
    results: tuple[Processor, ...]  # one per selected column

    def arguments(self, params: Mapping[str, Any]) -> list[Any]:
        values = []
        for name, bind in zip(self.names, self.binds, strict=True):
            value = params[name] if name in params else self.defaults[name]
            values.append(value if bind is None else bind(value))
        return values

    def row(self, record: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(
            value if result is None or value is None else result(value)
            for value, result in zip(record, self.results, strict=True)
        )


class Statements:
    """Statements compiled once for one dialect (and, for an INSERT, per set of value keys)."""

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect
        self._compiled: dict[tuple[object, tuple[str, ...]], Compiled] = {}

    def compile(self, statement: ClauseElement, keys: tuple[str, ...] = ()) -> Compiled:
        """An INSERT's columns left out of ``keys`` get their scalar defaults (a callable
        default is refused: nothing would run it). A statement is compiled once: one built per
        call (with its values in it) would be compiled every time, so hot statements are built
        once with named parameters."""
        key = (statement, keys)
        compiled = self._compiled.get(key)
        if compiled is not None:
            return compiled
        dialect = self._dialect
        sql = cast(
            SQLCompiler,
            statement.compile(dialect=dialect, column_keys=list(keys) if keys else None),
        )
        names = tuple(sql.positiontup or ())
        defaults: dict[str, Any] = {}
        for column in sql.insert_prefetch:
            default = column.default
            if default is None or not default.is_scalar:
                raise TypeError(
                    f"column {column.key!r} needs a value: its default is not a constant"
                )
            defaults[column.key] = default.arg  # type: ignore[attr-defined]
        for name in names:
            bind = sql.binds[name]
            if name not in defaults and not bind.required and not bind.callable:
                defaults[name] = bind.value
        binds = tuple(
            sql.binds[name].type.dialect_impl(dialect).bind_processor(dialect) for name in names
        )
        results = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in getattr(statement, "exported_columns", ())
        )
        compiled = Compiled(str(sql), names, binds, defaults, results)
        self._compiled[key] = compiled
        return compiled

    def compile_for(self, statement: ClauseElement, params: Mapping[str, Any]) -> Compiled:
        """``statement`` compiled for ``params``: an INSERT for the columns they name."""
        return self.compile(statement, tuple(params) if isinstance(statement, Insert) else ())


class Runner(Protocol):
    """The statements of one unit of work, each compiled once and sent on the driver."""

    @property
    def postgres(self) -> bool: ...

    def rows(self, statement: ClauseElement, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Run ``statement`` and return its rows, converted by its columns' types."""
        ...

    def execute(self, statement: ClauseElement, params: Mapping[str, Any]) -> None: ...


class SqliteRunner:
    """A ``Runner`` on a ``sqlite3`` connection, inside the transaction it is in."""

    postgres = False

    def __init__(self, connection: sqlite3.Connection, statements: Statements) -> None:
        self._connection = connection
        self._statements = statements

    def rows(self, statement: ClauseElement, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        compiled = self._statements.compile_for(statement, params)
        cursor = self._connection.execute(compiled.sql, compiled.arguments(params))
        return [compiled.row(row) for row in cursor.fetchall()]

    def execute(self, statement: ClauseElement, params: Mapping[str, Any]) -> None:
        compiled = self._statements.compile_for(statement, params)
        self._connection.execute(compiled.sql, compiled.arguments(params))


class SessionRunner:
    """A ``Runner`` through a session, where no driver connection of our own serves (an
    in-memory SQLite database)."""

    postgres = False

    def __init__(self, session: Session) -> None:
        self._session = session

    def rows(self, statement: ClauseElement, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self._session.execute(statement, params)]  # type: ignore[call-overload]

    def execute(self, statement: ClauseElement, params: Mapping[str, Any]) -> None:
        self._session.execute(statement, params)  # type: ignore[call-overload]


def in_session(work: Callable[[Runner], T], statements: Statements) -> Callable[[Session], T]:
    """``work`` as a unit of work for a session's transaction: its statements on the session's
    own ``sqlite3`` connection, or through the session where that is not the driver (aiosqlite,
    for an in-memory database)."""

    def unit(session: Session) -> T:
        driver = session.connection().connection.driver_connection
        if isinstance(driver, sqlite3.Connection):
            return work(SqliteRunner(driver, statements))
        return work(SessionRunner(session))

    return unit


class _PostgresRunner:
    """A ``Runner`` on an asyncpg connection, called from a unit of work that runs in a
    greenlet (``DriverStatements.transaction``): each statement is awaited on the loop."""

    postgres = True

    def __init__(self, connection: asyncpg.Connection, statements: Statements) -> None:
        self._connection = connection
        self._statements = statements
        self.wrote = False  # a statement that may change rows was sent

    def rows(self, statement: ClauseElement, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        compiled = self._compiled(statement, params)
        records = await_(self._connection.fetch(compiled.sql, *compiled.arguments(params)))
        return [compiled.row(record) for record in records]

    def execute(self, statement: ClauseElement, params: Mapping[str, Any]) -> None:
        compiled = self._compiled(statement, params)
        await_(self._connection.execute(compiled.sql, *compiled.arguments(params)))

    def _compiled(self, statement: ClauseElement, params: Mapping[str, Any]) -> Compiled:
        compiled = self._statements.compile_for(statement, params)
        if not self.wrote and writes(compiled.sql):
            self.wrote = True
        return compiled


class DriverStatements:
    """Run compiled statements of one PostgreSQL engine on its pooled driver connections."""

    def __init__(self, engine: AsyncEngine, statements: Statements, changes: Changes) -> None:
        self._engine = engine
        self._statements = statements
        self._changes = changes

    async def first(
        self, statement: Select[Any], params: Mapping[str, Any]
    ) -> tuple[Any, ...] | None:
        compiled = self._statements.compile(statement)
        record = await self._run("fetchrow", compiled, params)
        return None if record is None else compiled.row(record)

    async def insert(self, statement: Insert, values: Mapping[str, Any]) -> None:
        compiled = self._statements.compile(statement, tuple(values))
        self._changes.bump()
        try:
            await self._run("execute", compiled, values)
        finally:
            self._changes.bump()  # what was read before the commit is not current

    async def transaction(self, work: Callable[[Runner], T]) -> T:
        """``work`` in one transaction on one pooled connection, its statements on the driver
        (``work`` is synchronous: it runs in a greenlet, and each statement is awaited on the
        loop, as SQLAlchemy's ``run_sync`` does). Committed when ``work`` returns, rolled back
        when it raises."""
        connection = await self._engine.raw_connection()
        runner: _PostgresRunner | None = None
        try:
            driver = connection.driver_connection
            assert driver is not None
            runner = _PostgresRunner(driver, self._statements)
            async with driver.transaction():
                done = await greenlet_spawn(work, runner)
                if runner.wrote:
                    self._changes.bump()  # before the COMMIT, as ``Changes`` does for sessions
                return done
        except asyncpg.PostgresError:  # the server refused a statement: the connection is fine
            raise
        except BaseException as exc:  # the connection may be broken or mid-statement: drop it
            connection.invalidate(exc if isinstance(exc, Exception) else None)
            raise
        finally:
            # A unit that only read (a claim that found nothing) is no change (decision 0222).
            if runner is None or runner.wrote:
                self._changes.bump()  # what was read before the commit is not current
            connection.close()

    async def _run(self, method: str, compiled: Compiled, params: Mapping[str, Any]) -> Any:
        arguments = compiled.arguments(params)
        connection = await self._engine.raw_connection()
        try:
            return await getattr(connection.driver_connection, method)(compiled.sql, *arguments)
        except asyncpg.PostgresError:  # the server refused the statement: the connection is fine
            raise
        except BaseException as exc:  # the connection may be broken or mid-statement: drop it
            connection.invalidate(exc if isinstance(exc, Exception) else None)
            raise
        finally:
            connection.close()  # back to the pool (an invalidated one is discarded)
