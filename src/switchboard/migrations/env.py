"""Alembic environment: async engines, batch mode on SQLite."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import sqlalchemy as sa

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from switchboard.kit.models import UtcDateTime
from switchboard.models import Base

config = context.config
target_metadata = Base.metadata


def render_item(type_: str, obj: Any, autogen_context: Any) -> str | Literal[False]:
    """Render the project's column types by name, so revisions stay readable."""
    if type_ == "type" and isinstance(obj, UtcDateTime):
        autogen_context.imports.add("from switchboard.kit.models import UtcDateTime")
        return "UtcDateTime()"
    if type_ == "type" and isinstance(obj, sa.JSON) and obj._variant_mapping:
        autogen_context.imports.add("from switchboard.kit.models import JsonType")
        return "JsonType"
    return False


def run_sync(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        render_item=render_item,
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_async() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None
    engine = create_async_engine(url)
    async with engine.connect() as connection:
        await connection.run_sync(run_sync)
    await engine.dispose()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata)
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(run_async())
