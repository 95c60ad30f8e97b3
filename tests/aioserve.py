"""A small aiohttp application served on loopback for the length of a test: the fake issuers,
bridges, receivers and status-list servers that tests stand up in place of remote ends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def serving(
    app: web.Application, *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Serve ``app`` on ``host`` (on ``port``, or one the kernel picks); yields the base URL
    ``http://host:port`` and stops the server on leaving."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        yield f"http://{host}:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
