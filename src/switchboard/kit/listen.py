"""A PostgreSQL LISTEN connection kept up until told to stop.

``listen`` connects with asyncpg (outside SQLAlchemy's pool: a listening connection is held for
the process's life), subscribes to one channel and, when the connection drops or cannot be made,
tries again a second later. The read cache's change version (``kit.changes``) and the webhook
sender's wake-up both use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

log = logging.getLogger("switchboard.db")

RELISTEN_SECONDS = 1.0

# asyncpg's listener signature: (connection, server pid, channel, payload).
Listener = Callable[[Any, int, str, str], None]


def _nothing(_conn: Any = None) -> None:
    return None


async def listen(
    url: str,
    channel: str,
    listener: Listener,
    stop: asyncio.Event,
    *,
    on_up: Callable[[Any], None] = _nothing,
    on_down: Callable[[], None] = _nothing,
    name: str = "LISTEN",
) -> None:
    """LISTEN on ``channel`` of the database at ``url`` (a SQLAlchemy URL) until ``stop``.

    ``on_up(connection)`` runs once each connection listens (what was committed while nobody
    listened is for it to catch up on), ``on_down()`` once it is lost or closed."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    while not stop.is_set():
        try:
            await _listen_once(dsn, channel, listener, stop, on_up, on_down)
        except (OSError, asyncpg.PostgresError):
            log.warning("the %s connection failed; retrying", name)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), RELISTEN_SECONDS)


async def _listen_once(
    dsn: str,
    channel: str,
    listener: Listener,
    stop: asyncio.Event,
    on_up: Callable[[Any], None],
    on_down: Callable[[], None],
) -> None:
    conn = await asyncpg.connect(dsn)
    lost = asyncio.Event()
    try:
        await conn.add_listener(channel, listener)
        conn.add_termination_listener(lambda _conn: lost.set())
        on_up(conn)
        done = [asyncio.create_task(lost.wait()), asyncio.create_task(stop.wait())]
        try:
            await asyncio.wait(done, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in done:
                task.cancel()
    finally:
        on_down()
        with contextlib.suppress(Exception):
            await conn.close(timeout=1)
