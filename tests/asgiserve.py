"""The application under uvicorn on a real loopback port for the length of a test: for a
browser, for the bridge's callbacks, for WebSocket clients. ``tests/aioserve.py`` serves the
fake remote ends (aiohttp) the same way."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette


def _server(app: Starlette, port: int, options: dict[str, Any]) -> uvicorn.Server:
    return uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_config=None, access_log=False, **options
        )
    )


@contextmanager
def serving_in_thread(
    app: Starlette, port: int, *, within: float = 10, **options: Any
) -> Iterator[None]:
    """Serve ``app`` on ``port`` from a thread and an event loop of its own, for a test that
    drives it from synchronous code; waits (at most ``within`` seconds) until it listens and
    stops it on leaving. ``options`` go to ``uvicorn.Config``."""
    server = _server(app, port, options)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + within
    try:
        while not server.started:  # uvicorn offers no event to wait on
            assert thread.is_alive(), "uvicorn stopped"
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=within)


@asynccontextmanager
async def serving(
    app: Starlette, *, port: int = 0, within: float = 10, **options: Any
) -> AsyncIterator[int]:
    """Serve ``app`` on this test's event loop, on ``port`` or one the kernel picks; yields the
    port once it listens (at most ``within`` seconds) and stops the server on leaving.
    ``options`` go to ``uvicorn.Config``."""
    server = _server(app, port, options)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(within):
            while not server.started:
                if task.done():
                    task.result()  # the start failed: its error, not a timeout
                await asyncio.sleep(0.01)
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, within)
