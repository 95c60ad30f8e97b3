"""``/healthz`` (the process answers), ``/readyz`` (it can serve) and ``/metrics``: cheap and
unauthenticated, for load balancers, orchestrators and Prometheus."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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


def ops_routes(
    runtime: Runtime, metrics: Metrics, *, bridge: Callable[[Runtime], Awaitable[str]]
) -> list[Route]:
    """The probes and the metrics; ``bridge`` tells the media bridge's state for ``/readyz``
    (the platform's ``bridge_readiness``): ``ok``, ``simulator``, ``not-configured`` or
    ``unavailable``, the one state that makes the process not ready."""

    async def healthz(_request: Request) -> Response:
        return JsonResponse({"status": "ok"})

    async def readyz(_request: Request) -> Response:
        database, migrations = await _database(runtime)
        bridge_state = await bridge(runtime)
        ready = database == "ok" and migrations == "current" and bridge_state != "unavailable"
        body = {
            "status": "ready" if ready else "not-ready",
            "database": database,
            "migrations": migrations,
            "bridge": bridge_state,
        }
        return JsonResponse(body, status_code=200 if ready else 503)

    async def metrics_endpoint(_request: Request) -> Response:
        return Response(await metrics.scrape(runtime), media_type=PROMETHEUS_TYPE)

    return [
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/readyz", readyz, methods=["GET", "HEAD"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
    ]
