"""Single statements sent straight to the driver, for the hottest paths (decision 0999).

A statement run through a session costs about 290 us of CPU on the reference machine, of which
asyncpg's own part is under 60 us: the session, its connection object, the execution context
and the result set cost the rest. ``DriverStatements`` compiles each SQLAlchemy statement once
for the engine's dialect (its SQL, the order of its parameters, the type processing of each
parameter and column) and then runs it on a pooled asyncpg connection, taken from and returned
to the engine's own pool: about 110 us. ``Statements`` is the compiling half, which
``Database`` also uses for SQLite's threads (their connections are ``sqlite3``'s own).

Each statement is its own transaction (asyncpg outside a transaction), as the platform's other
single-statement reads and writes on PostgreSQL are (decisions 0992 and 0993). A write moves
the process's change version (``Changes``) as a committed session write does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy import Insert, Select
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard.kit.changes import Changes

Processor = Callable[[Any], Any] | None


@dataclass(frozen=True, slots=True)
class Compiled:
    """A statement as the driver takes it: its SQL and how to order and convert values."""

    sql: str
    names: tuple[str, ...]  # the parameters, in the order of $1, $2, ...
    binds: tuple[Processor, ...]  # one per parameter
    defaults: Mapping[str, Any]  # scalar column defaults for an INSERT's missing columns
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

    def compile(self, statement: Select[Any] | Insert, keys: tuple[str, ...] = ()) -> Compiled:
        """An INSERT's columns left out of ``keys`` get their scalar defaults (a callable
        default is refused: nothing would run it)."""
        key = (statement, keys)
        compiled = self._compiled.get(key)
        if compiled is not None:
            return compiled
        dialect = self._dialect
        sql = statement.compile(dialect=dialect, column_keys=list(keys) if keys else None)
        names = tuple(sql.positiontup or ())
        defaults: dict[str, Any] = {}
        for column in sql.insert_prefetch:
            default = column.default
            if default is None or not default.is_scalar:
                raise TypeError(
                    f"column {column.key!r} needs a value: its default is not a constant"
                )
            defaults[column.key] = default.arg  # type: ignore[attr-defined]
        binds = tuple(
            sql.binds[name].type.dialect_impl(dialect).bind_processor(dialect) for name in names
        )
        results = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in getattr(statement, "selected_columns", ())
        )
        compiled = Compiled(str(sql), names, binds, defaults, results)
        self._compiled[key] = compiled
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
