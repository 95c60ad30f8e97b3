"""A scriptable bridge on a real loopback port: records requests, never calls back by itself."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiohttp import web

from switchboard.bridge import protocol
from tests.aioserve import serving

SECRET = "fake-bridge-secret"


@dataclass
class FakeBridge:
    url: str = ""
    dials: list[dict[str, Any]] = field(default_factory=list)
    hangups: list[dict[str, Any]] = field(default_factory=list)
    state: str = "unknown"
    dial_status: int = 200
    bad_signatures: int = 0
    # When set, a dial is answered only once ``hold`` is set; ``dialling`` is set on its arrival.
    hold: asyncio.Event | None = None
    dialling: asyncio.Event = field(default_factory=asyncio.Event)

    def app(self) -> web.Application:
        async def signed(request: web.Request) -> dict[str, Any] | None:
            body = await request.read()
            if not protocol.verify(SECRET, body, request.headers.get(protocol.SIGNATURE_HEADER)):
                self.bad_signatures += 1
                return None
            data: dict[str, Any] = orjson.loads(body)
            return data

        async def health(_request: web.Request) -> web.Response:
            return web.json_response({"ok": True, "protocol": 1, "bridge": "fake"})

        async def dial(request: web.Request) -> web.Response:
            data = await signed(request)
            if data is None:
                return web.json_response({"error": "bad_signature"}, status=401)
            self.dials.append(data)
            self.dialling.set()
            if self.hold is not None:
                await self.hold.wait()
            if self.dial_status != 200:
                return web.json_response({"error": "refused"}, status=self.dial_status)
            return web.json_response(
                {"accepted": True, "callId": data["callId"], "attempt": data["attempt"]}
            )

        async def hangup(request: web.Request) -> web.Response:
            data = await signed(request)
            if data is None:
                return web.json_response({"error": "bad_signature"}, status=401)
            self.hangups.append(data)
            return web.json_response({"ok": True, "state": "ended"})

        async def status(request: web.Request) -> web.Response:
            data = await signed(request)
            if data is None:
                return web.json_response({"error": "bad_signature"}, status=401)
            return web.json_response(
                {"callId": data["callId"], "attempt": data["attempt"], "state": self.state}
            )

        app = web.Application()
        app.router.add_get("/v1/health", health)
        app.router.add_post("/v1/calls", dial)
        app.router.add_post("/v1/calls/{call_id}/hangup", hangup)
        app.router.add_post("/v1/calls/{call_id}/status", status)
        return app


@pytest.fixture
async def fake_bridge() -> AsyncIterator[FakeBridge]:
    bridge = FakeBridge()
    async with serving(bridge.app()) as base:
        bridge.url = base
        yield bridge
