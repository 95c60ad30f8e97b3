"""A real local HTTP receiver, and helpers to subscribe and emit."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiohttp import web

from switchboard.kit.clock import ManualClock
from switchboard.kit.destinations import parse_networks
from switchboard.platform.webhooks import queue, service
from switchboard.platform.webhooks.outbox import emit
from switchboard.platform.webhooks.tasks import Sender
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants
from tests.aioserve import serving
from tests.factories import TenantFixture
from tests.webhooks.samples import sample

LOOPBACK = ("127.0.0.0/8", "::1/128")


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


@dataclass
class Receiver:
    """Records every POST; ``status[path]`` (a list consumed in order, or a code) decides the
    answer, ``text[path]`` its body (else ``answer <code>``), ``gate[path]`` (an event) holds
    the answer until the test releases it."""

    base: str = ""
    requests: list[Received] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)
    gate: dict[str, asyncio.Event] = field(default_factory=dict)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def at(self, path: str) -> list[Received]:
        return [r for r in self.requests if r.path == path]

    def bodies(self, path: str | None = None) -> list[dict[str, Any]]:
        """Each delivery's body once (at ``path``, or anywhere), as a receiver deduplicating by
        ``webhook-id`` keeps them: delivery is at least once."""
        seen: dict[str, bytes] = {}
        for r in self.requests if path is None else self.at(path):
            seen.setdefault(r.headers["webhook-id"], r.body)
        return [orjson.loads(body) for body in seen.values()]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(Received(request.path, dict(request.headers), body, time.monotonic()))
        self.arrived.set()
        gate = self.gate.get(request.path)
        if gate is not None:
            await gate.wait()
        if request.path == "/redirect":
            raise web.HTTPFound(self.url("/target"))
        answer = self.status.get(request.path, 200)
        code = (answer.pop(0) if answer else 200) if isinstance(answer, list) else answer
        return web.Response(status=int(code), text=self.text.get(request.path, f"answer {code}"))

    async def wait_for(self, predicate: Callable[[], bool], within: float = 10.0) -> None:
        async with asyncio.timeout(within):
            while not predicate():
                self.arrived.clear()
                if predicate():
                    return
                await self.arrived.wait()


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhook_allow_private": LOOPBACK, "webhook_timeout": 5.0})


async def bare_tenant(runtime: Runtime, name: str) -> TenantFixture:
    """A tenant without users: enough for everything but HTTP calls (no password hashing)."""
    async with runtime.db.transaction() as session:
        row = await tenants.create_tenant(
            session, name=name, domains=[f"{name}.test"], clock=runtime.clock, box=runtime.box
        )
    return TenantFixture(id=row.id, name=name, host=f"{name}.test")


@pytest.fixture
async def org(runtime: Runtime) -> TenantFixture:
    return await bare_tenant(runtime, "initech")


@pytest.fixture
async def other_org(runtime: Runtime) -> TenantFixture:
    return await bare_tenant(runtime, "umbrella")


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    rec = Receiver()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", rec.handle)
    async with serving(app) as rec.base:
        yield rec
        for gate in rec.gate.values():
            gate.set()


async def subscribe(
    runtime: Runtime, tenant: TenantFixture, url: str, events: list[str] | None = None
) -> tuple[str, str]:
    async with runtime.db.transaction() as session:
        row, secret = await service.create_subscription(
            session,
            tenant_id=tenant.id,
            url=url,
            events=events or ["*"],
            created_by="test",
            clock=runtime.clock,
            box=runtime.box,
            allow=parse_networks(runtime.settings.webhook_allow_private),
        )
    return row.id, secret


_CALL_IDS = itertools.count()  # a new call per default event: no ordering between them


async def fire(
    runtime: Runtime,
    tenant: TenantFixture,
    event: str = "call.started",
    data: dict[str, Any] | None = None,
    count: int = 1,
) -> None:
    """Emit ``event``: its sample payload with ``data``'s fields, each of a call event naming a
    new call unless ``data`` names one."""
    async with runtime.db.transaction() as session:
        for _ in range(count):
            payload = sample(event, **(data or {}))
            if "callId" in payload and "callId" not in (data or {}):
                payload["callId"] = f"c{next(_CALL_IDS)}"
            await emit(
                session,
                tenant_id=tenant.id,
                tenant_name=tenant.name,
                event=event,
                data=payload,
                clock=runtime.clock,
            )


async def deliver_until(
    runtime: Runtime,
    receiver: Receiver,
    done: Callable[[list[dict[str, Any]]], bool],
    *,
    path: str | None = None,
    within: float = 60.0,
) -> list[dict[str, Any]]:
    """Send what is due until ``done`` holds for the bodies received (``Receiver.bodies``);
    returns them.

    One sender (and its kept-alive connection) serves every pass. An attempt that failed before
    the receiver saw it (this loop also runs the receiver, and a loop stalled past the POST's
    timeout loses the attempt) is retried when it comes due: a manual clock is moved to it, the
    real one waited for. The bound is generous: on a loaded machine the events of real
    processes come late."""
    manual = runtime.clock if isinstance(runtime.clock, ManualClock) else None
    async with Sender(runtime) as sender, asyncio.timeout(within):
        while not done(bodies := receiver.bodies(path)):
            if await sender.pass_once():
                continue
            due = await runtime.db.read(queue.next_due)
            if manual is not None and due is not None and due >= manual.now():
                manual.advance((due - manual.now()).total_seconds() + 0.001)
            else:
                await asyncio.sleep(0.02)
    return bodies
