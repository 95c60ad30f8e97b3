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
    async with serving_on(app, host, port=port) as (base,):
        yield base


@asynccontextmanager
async def serving_on(app: web.Application, *hosts: str, port: int = 0) -> AsyncIterator[list[str]]:
    """Serve ``app`` on each of ``hosts`` at once (one application, e.g. a provider reached under
    two names); yields their base URLs in the same order and stops the server on leaving."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        bases = []
        for host in hosts:
            await web.TCPSite(runner, host, port).start()
            bases.append(f"http://{host}:{runner.addresses[-1][1]}")
        yield bases
    finally:
        await runner.cleanup()
