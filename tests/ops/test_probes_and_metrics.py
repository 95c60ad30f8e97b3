"""``/healthz``, ``/readyz`` and ``/metrics``, scraped over HTTP and parsed as Prometheus text."""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import logging
import re
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from httpx import ASGITransport, AsyncClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from switchboard.app import create_app
from switchboard.kit.clock import ManualClock
from switchboard.ops.endpoints import migration_heads
from switchboard.platform.bridging.client import close_bridge
from switchboard.platform.webhooks import service as webhooks
from switchboard.platform.webhooks.outbox import emit
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.aioserve import serving
from tests.calls.helpers import call_body
from tests.conftest import PRIMARY_HOST
from tests.factories import TenantFixture, api_key
from tests.webhooks.samples import sample

LOOPBACK = ipaddress.ip_network("127.0.0.0/8")


def samples(body: str) -> list[tuple[str, dict[str, str], float]]:
    return [
        (sample.name, dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(body)
        for sample in family.samples
    ]


def value(body: str, name: str, **labels: str) -> float:
    found = [v for n, ls, v in samples(body) if n == name and labels.items() <= ls.items()]
    assert len(found) == 1, (name, labels, found)
    return found[0]


async def stamp_migrations(runtime: Runtime) -> AsyncIterator[None]:
    async with runtime.db.transaction() as session:
        await session.execute(
            text("CREATE TABLE IF NOT EXISTS alembic_version (version_num VARCHAR(32) NOT NULL)")
        )
        await session.execute(text("DELETE FROM alembic_version"))
        for head in migration_heads():
            await session.execute(text("INSERT INTO alembic_version VALUES (:v)"), {"v": head})
    yield
    async with runtime.db.transaction() as session:
        await session.execute(text("DROP TABLE alembic_version"))


@pytest.fixture
async def migrated(runtime: Runtime) -> AsyncIterator[None]:
    async for _ in stamp_migrations(runtime):
        yield


async def test_healthz_answers_without_credentials(app_client: AsyncClient) -> None:
    response = await app_client.get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


async def test_readyz_needs_current_migrations(app_client: AsyncClient, runtime: Runtime) -> None:
    unmigrated = await app_client.get("/readyz")  # the test schema comes from the models
    assert unmigrated.status_code == 503
    assert unmigrated.json()["migrations"] == "pending"
    async for _ in stamp_migrations(runtime):
        ready = await app_client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json() == {
            "status": "ready", "database": "ok", "migrations": "current", "bridge": "simulator",
        }  # fmt: skip


async def test_readyz_follows_the_configured_bridges_health(
    settings: Settings, migrated: None
) -> None:
    healthy = True

    async def health(_request: web.Request) -> web.Response:
        return web.Response(status=200 if healthy else 503, text="ok")

    bridge = web.Application()
    bridge.router.add_get("/v1/health", health)
    served = contextlib.AsyncExitStack()
    base = await served.enter_async_context(serving(bridge))
    runtime = Runtime(
        settings.model_copy(update={"bridge_url": base, "bridge_secret": "s" * 32}),
        clock=ManualClock(),
    )
    app = create_app(runtime=runtime)
    try:
        async with AsyncClient(transport=ASGITransport(app=app), base_url="http://x") as client:
            ok = await client.get("/readyz")
            assert (ok.status_code, ok.json()["bridge"]) == (200, "ok")
            healthy = False
            down = await client.get("/readyz")
            assert (down.status_code, down.json()["bridge"]) == (503, "unavailable")
            await served.aclose()  # the bridge stops
            gone = await client.get("/readyz")
            assert (gone.status_code, gone.json()["bridge"]) == (503, "unavailable")
    finally:
        await served.aclose()
        await close_bridge(runtime)
        await runtime.db.dispose()


async def test_metrics_report_requests_calls_webhooks_and_lateness(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, clock: ManualClock
) -> None:
    headers = {"Authorization": f"Bearer {await api_key(runtime, acme)}"}
    async with runtime.db.transaction() as session:
        await webhooks.create_subscription(
            session, tenant_id=acme.id, url="http://127.0.0.1:9/in", events=["*"],
            created_by="admin", clock=clock, box=runtime.box, allow=[LOOPBACK],
        )  # fmt: skip
        await emit(
            session, tenant_id=acme.id, tenant_name=acme.name, event="call.ended",
            data=sample("call.ended"), clock=clock,
        )  # fmt: skip
    later = clock.now() + dt.timedelta(seconds=60)
    scheduled = call_body(scheduleAtUtc=later.isoformat().replace("+00:00", "Z"))
    response = await app_client.post("/api.ashx/v1/calls", json=scheduled, headers=headers)
    assert response.status_code == 200, response.text
    assert (await app_client.get("/api.ashx/v1/calls/nope", headers=headers)).status_code == 404
    assert (await app_client.get("/api.ashx/v1/calls", headers=headers)).status_code == 200
    clock.advance(60 + 42)

    scrape = await app_client.get("/metrics")
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain; version=0.0.4")
    body = scrape.text
    latency = "switchboard_http_request_duration_seconds_count"
    assert value(body, latency, route="/api.ashx/v1/calls/{call_id}", status="404") == 1
    assert value(body, latency, route="/api.ashx/v1/calls", status="200", method="GET") == 1
    assert value(body, latency, route="/api.ashx/v1/calls", status="200", method="POST") == 1
    assert not [ls for n, ls, _ in samples(body) if "nope" in ls.get("route", "")]
    assert value(body, "switchboard_calls", status="scheduled") == 1
    assert value(body, "switchboard_dispatch_lateness_seconds") == pytest.approx(42, abs=1)
    pending = value(body, "switchboard_webhook_deliveries", status="pending")
    assert pending == 1  # waiting: the workers do not run in this test
    assert value(body, "switchboard_webhook_lag_seconds") == pytest.approx(102, abs=1)
    assert value(body, "switchboard_webhook_failed_attempts") == 0
    build = [ls for n, ls, _ in samples(body) if n == "switchboard_build_info"]
    assert len(build) == 1
    assert build[0]["version"]
    assert "+" in build[0]["build"]
    if runtime.db.dialect == "postgresql":
        assert (
            value(body, "switchboard_db_pool_connections", state="size")
            == runtime.settings.database_pool_size
        )


async def test_every_request_gets_an_id_and_one_access_log_line(
    app_client: AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="switchboard.access"):
        given = await app_client.get("/api.ashx/v1/calls/abc", headers={"X-Request-Id": "req-42"})
        made = await app_client.get("/healthz")
        hostile = await app_client.get("/healthz", headers={"X-Request-Id": "a b<script>" * 3})
    assert given.headers["x-request-id"] == "req-42"
    assert re.fullmatch("[0-9a-f]{16}", made.headers["x-request-id"])
    replaced = hostile.headers["x-request-id"]
    assert re.fullmatch("[0-9a-f]{16}", replaced)
    assert replaced != made.headers["x-request-id"]
    assert replaced[:8] == made.headers["x-request-id"][:8]  # the process's prefix
    lines = [r for r in caplog.records if r.name == "switchboard.access"]
    assert len(lines) == 3
    first = lines[0]
    assert (first.method, first.route, first.status, first.request_id) == (  # type: ignore[attr-defined]
        "GET", "/api.ashx/v1/calls/{call_id}", 401, "req-42",
    )  # fmt: skip
    assert first.duration_ms >= 0  # type: ignore[attr-defined]


async def test_the_host_header_of_the_primary_tenant_is_not_needed(app_client: AsyncClient) -> None:
    """Probes come from load balancers that send any Host."""
    for path in ("/healthz", "/metrics"):
        response = await app_client.get(path, headers={"Host": "10.0.0.7:8000"})
        assert response.status_code == 200, path
    assert PRIMARY_HOST


async def test_a_request_refused_before_routing_is_labelled_with_its_route(
    app_client: AsyncClient,
    acme: TenantFixture,
    runtime: Runtime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A body above the limit (declared or streamed) and a duplicate JSON key are answered
    before the routing runs; the access line and the metrics still name the route."""
    headers = {**await acme.auth(app_client), "Content-Type": "application/json"}
    over = b"x" * (runtime.settings.max_body_bytes + 1)

    async def streamed() -> AsyncIterator[bytes]:
        yield over

    with caplog.at_level(logging.INFO, logger="switchboard.access"):
        declared = await app_client.post("/api/v1/properties", content=over, headers=headers)
        chunked = await app_client.post(
            "/api.ashx/v1/api-keys", content=streamed(), headers=headers
        )
        twice = await app_client.post(
            "/api.ashx/v1/calls/c-1/hangup", content=b'{"a": 1, "a": 2}', headers=headers
        )
    assert (declared.status_code, chunked.status_code, twice.status_code) == (413, 413, 400)
    access = [r for r in caplog.records if r.name == "switchboard.access"]
    lines = [(r.method, r.route, r.status) for r in access]  # type: ignore[attr-defined]
    assert lines == [
        ("POST", "/api/v1/properties", 413),
        ("POST", "/api.ashx/v1/api-keys", 413),
        ("POST", "/api.ashx/v1/calls/{call_id}/hangup", 400),
    ]
    body = (await app_client.get("/metrics")).text
    latency = "switchboard_http_request_duration_seconds_count"
    assert value(body, latency, route="/api/v1/properties", status="413", method="POST") == 1
    assert value(body, latency, route="/api.ashx/v1/api-keys", status="413", method="POST") == 1
    assert not [ls for n, ls, _ in samples(body) if ls.get("route") == "(unmatched)"]


async def test_a_path_no_route_matches_is_unmatched_inside_a_mounted_application_too(
    app_client: AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="switchboard.access"):
        for path in ("/nowhere", "/api/nowhere", "/admin/nowhere", "/oidc.ashx/nowhere"):
            assert (await app_client.get(path)).status_code == 404, path
    routes = {r.route for r in caplog.records if r.name == "switchboard.access"}  # type: ignore[attr-defined]
    assert routes == {"(unmatched)"}
    body = (await app_client.get("/metrics")).text
    latency = "switchboard_http_request_duration_seconds_count"
    assert value(body, latency, route="(unmatched)", status="404", method="GET") == 4
