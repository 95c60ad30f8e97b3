"""``/healthz`` (the process answers), ``/readyz`` (it can serve) and ``/metrics``: cheap and
unauthenticated, for load balancers, orchestrators and Prometheus."""

from __future__ import annotations

import asyncio
from functools import cache
from typing import TYPE_CHECKING

from sqlalchemy import text
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from switchboard.kit.http import JsonResponse

if TYPE_CHECKING:
    from switchboard.ops.metrics import Metrics
    from switchboard.runtime import Runtime

PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BRIDGE_TIMEOUT = 2.0


@cache
def migration_heads() -> frozenset[str]:
    from alembic.script import ScriptDirectory

    from switchboard.migrate import MIGRATIONS

    return frozenset(ScriptDirectory(str(MIGRATIONS)).get_heads())


async def _database(runtime: Runtime) -> tuple[str, str]:
    if not await runtime.db.answers():
        return "unavailable", "unknown"
    try:
        async with runtime.db.transaction(read_only=True) as session:
            rows = await session.execute(text("SELECT version_num FROM alembic_version"))
            applied = {str(row[0]) for row in rows}
    except Exception:  # no version table: never migrated
        applied = set()
    return "ok", "current" if applied == migration_heads() else "pending"


async def _bridge(runtime: Runtime) -> str:
    url = runtime.settings.bridge_url.strip()
    if not url or url.lower() == "none":
        return "not-configured" if url else "simulator"
    from switchboard.platform.bridging.client import bridge_for

    try:
        await asyncio.wait_for(bridge_for(runtime).health(), BRIDGE_TIMEOUT)
    except Exception:  # unreachable, refused or slow: not ready
        return "unavailable"
    return "ok"


def ops_routes(runtime: Runtime, metrics: Metrics) -> list[Route]:
    async def healthz(_request: Request) -> Response:
        return JsonResponse({"status": "ok"})

    async def readyz(_request: Request) -> Response:
        database, migrations = await _database(runtime)
        bridge = await _bridge(runtime)
        ready = database == "ok" and migrations == "current" and bridge != "unavailable"
        body = {
            "status": "ready" if ready else "not-ready",
            "database": database,
            "migrations": migrations,
            "bridge": bridge,
        }
        return JsonResponse(body, status_code=200 if ready else 503)

    async def metrics_endpoint(_request: Request) -> Response:
        return Response(await metrics.scrape(runtime), media_type=PROMETHEUS_TYPE)

    return [
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/readyz", readyz, methods=["GET", "HEAD"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
    ]
