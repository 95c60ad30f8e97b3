"""A real server on a free port, WebSocket peers, and a real webhook receiver."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import pytest
from websockets.asyncio.client import ClientConnection, connect

from switchboard.app import create_app
from switchboard.platform.rooms import repository
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.asgiserve import serving
from tests.webhooks.conftest import LOOPBACK, Receiver, deliver_until, receiver, subscribe

__all__ = ["receiver"]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"webhook_allow_private": LOOPBACK, "webhook_timeout": 5.0,
                "room_max_peers": 4, "room_max_message_bytes": 4096,
                "room_max_messages_per_second": 20}
    )  # fmt: skip


@dataclass
class Server:
    port: int
    runtime: Runtime

    def http(self, host: str | None = None) -> httpx.AsyncClient:
        """An HTTP client of this server, ``Host: host`` when given. The server shares this
        test's event loop, and on a loaded run that loop has gone more than httpx's default 5 s
        without answering: the timeout is as generous as the peers' (``open_timeout`` below)."""
        headers = {"Host": host} if host else {}
        return httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{self.port}", headers=headers, timeout=30
        )

    def peer(
        self, host: str, room: str = "x", query: str = "", cookie: str = "", forwarded: str = ""
    ) -> Any:
        """``forwarded``: the client address an ``X-Forwarded-For`` names (the server must
        trust 127.0.0.1 as a proxy for it to count)."""
        uri = f"ws://{host}/signal.ashx?room={room}{query}"
        headers = {"Cookie": cookie} if cookie else {}
        if forwarded:
            headers["X-Forwarded-For"] = forwarded
        # as generous as ``Client.expect``: the server shares this test's event loop, and on a
        # loaded two-worker run that loop once went more than 5 s without reaching the accept
        return connect(
            uri, host="127.0.0.1", port=self.port, open_timeout=15, additional_headers=headers
        )


@pytest.fixture
async def server(runtime: Runtime) -> AsyncIterator[Server]:
    app = create_app(runtime=runtime)
    # timeout_keep_alive: the server shares this loop with its clients (see the platform fixture
    # in tests/mediabridge/conftest.py), so an idle connection must outlast a stalled loop.
    async with serving(app, lifespan="on", ws="websockets-sansio", timeout_keep_alive=600) as port:
        yield Server(port, runtime)


@pytest.fixture
async def acme(runtime: Runtime) -> factories.TenantFixture:
    return await factories.tenant(runtime, "acme", ["acme.test"])


@pytest.fixture
def hooks_of(runtime: Runtime, receiver: Receiver) -> Callable[..., Any]:
    """``await hooks_of(tenant)``: subscribe the receiver to ``tenant``'s events; returns
    ``delivered``, as the ``hooks`` fixture below."""

    async def subscribed(tenant: factories.TenantFixture) -> Callable[..., Any]:
        await subscribe(runtime, tenant, receiver.url("/hook"))

        async def delivered(count: int) -> list[dict[str, Any]]:
            """Send what is due until the receiver holds ``count`` events; their bodies (the
            connection events come as late as the peers' handshakes with Janus finish)."""
            return await deliver_until(runtime, receiver, lambda bodies: len(bodies) >= count)

        return delivered

    return subscribed


@pytest.fixture
async def hooks(acme: factories.TenantFixture, hooks_of: Callable[..., Any]) -> Callable[..., Any]:
    """``await hooks(count)``: the bodies of acme's events once the receiver holds ``count``."""
    delivered: Callable[..., Any] = await hooks_of(acme)
    return delivered


@dataclass
class Client:
    ws: ClientConnection
    inbox: list[dict[str, Any]] = field(default_factory=list)

    async def send(self, **message: Any) -> None:
        await self.ws.send(orjson.dumps(message).decode())

    async def expect(self, kind: str, within: float = 15.0) -> dict[str, Any]:
        # generous: a join on PostgreSQL in a loaded two-worker suite once took over 5 s
        async with asyncio.timeout(within):
            while True:
                for i, message in enumerate(self.inbox):
                    if message["type"] == kind:
                        return self.inbox.pop(i)
                self.inbox.append(orjson.loads(await self.ws.recv()))


async def with_lobby(runtime: Runtime, tenant_id: int, name: str) -> None:
    """Give room ``name`` a lobby, as ``switchboard room lobby`` does: unverified peers wait."""
    async with runtime.db.transaction() as session:
        row = await repository.get_or_create(
            session, tenant_id=tenant_id, name=name, now=runtime.clock.now()
        )
        row.lobby = True
