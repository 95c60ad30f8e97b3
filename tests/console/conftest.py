"""A real server, a real webhook receiver and Debian's chromium for the console's page tests."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from httpx import ASGITransport, AsyncClient

from switchboard.app import create_app
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.asgiserve import serving_in_thread
from tests.console.signin import console_clients
from tests.factories import TenantFixture


@dataclass
class Receiver:
    """A plain HTTP server that answers every POST 200 and keeps what it received."""

    url: str
    bodies: list[bytes] = field(default_factory=list)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            found.bodies.append(self.rfile.read(length))
            body = b"received, thanks"
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield found
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@dataclass
class Served:
    base: str
    settings: Settings


def serve(settings: Settings) -> Iterator[Served]:
    """The whole application under uvicorn on ``settings.public_base_url``'s port."""
    port = int(settings.public_base_url.rsplit(":", 1)[1])
    app = create_app(runtime=Runtime(settings))
    with serving_in_thread(app, port, within=15, timeout_graceful_shutdown=2):
        yield Served(base=settings.public_base_url, settings=settings)


def run(coroutine: object) -> object:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


@pytest.fixture
async def browsers(
    runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> AsyncIterator[dict[str, AsyncClient]]:
    """One cookie jar per tenant host, as two browsers would have."""
    app = create_app(runtime=runtime)
    await console_clients(runtime, acme, globex)
    async with runtime.lifespan():
        transport = ASGITransport(app=app)
        async with (
            AsyncClient(transport=transport, base_url=f"http://{acme.host}") as a,
            AsyncClient(transport=transport, base_url=f"http://{globex.host}") as g,
        ):
            yield {"acme": a, "globex": g}


@pytest.fixture
async def two(runtime: Runtime, acme: TenantFixture) -> AsyncIterator[list[AsyncClient]]:
    """Two browsers on acme's host, each with its own cookies."""
    app = create_app(runtime=runtime)
    await console_clients(runtime, acme)
    async with runtime.lifespan():
        transport = ASGITransport(app=app)
        async with (
            AsyncClient(transport=transport, base_url=f"http://{acme.host}") as first,
            AsyncClient(transport=transport, base_url=f"http://{acme.host}") as second,
        ):
            yield [first, second]
