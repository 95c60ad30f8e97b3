"""One process: identity provider, platform API, operator console, linen portal and its web app."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable

from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from switchboard.console.app import create_console_app
from switchboard.identity.app import create_identity_app
from switchboard.identity.issuance.endpoints import well_known_routes
from switchboard.kit.clock import Clock
from switchboard.kit.http import (
    BodyLimitMiddleware,
    HeadMiddleware,
    LayeredStarlette,
    NoStoreMiddleware,
    RejectDuplicateKeysMiddleware,
    RejectNulMiddleware,
    http_exception_response,
)
from switchboard.kit.readcache import ReadCache
from switchboard.linen.app import create_linen_app
from switchboard.linen.invoices.endpoints import UPLOAD_LIMIT
from switchboard.linen.web.app import create_linen_web_app
from switchboard.ops.endpoints import ops_routes
from switchboard.ops.metrics import Metrics
from switchboard.ops.middleware import AccessLogMiddleware
from switchboard.platform.app import create_platform_app
from switchboard.platform.backlog import read_backlog
from switchboard.platform.bridging.client import bridge_readiness, close_bridge, run_in_process
from switchboard.platform.callbacks.local import in_process_simulator, mounted_simulator
from switchboard.platform.catalogue.endpoints import CATALOGUE_PATH
from switchboard.platform.catalogue.fastpath import catalogue_answer
from switchboard.platform.whitelist.endpoints import MAX_BODY_BYTES as WHITELIST_LIMIT
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.workers import all_workers

# Bodies allowed above SWITCHBOARD_MAX_BODY_BYTES: the invoice uploads and a whitelist write.
LARGER_BODIES = (
    (re.compile(r"/(v1|laundry|app)/invoices$"), UPLOAD_LIMIT),
    (re.compile(r"/signal\.ashx$"), WHITELIST_LIMIT),
)


def create_app(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    runtime: Runtime | None = None,
) -> Starlette:
    runtime = runtime or Runtime(settings or Settings(), clock=clock)
    run_in_process(in_process_simulator)  # the bridge when SWITCHBOARD_BRIDGE_URL is empty
    if not runtime.workers:
        runtime.workers.extend(all_workers())
    runtime.watch_changes = runtime.settings.read_cache_entries > 0
    identity = create_identity_app(runtime)
    linen = create_linen_app(runtime)
    platform = create_platform_app(runtime, extra_openapi=identity)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with runtime.lifespan():
            try:
                yield
            finally:
                await close_bridge(runtime)  # simulated calls end before the database closes

    metrics = Metrics(backlog=read_backlog)
    console = create_console_app(runtime)
    linen_web = create_linen_web_app(runtime)
    routes: list[BaseRoute] = [
        *ops_routes(runtime, metrics, bridge=bridge_readiness),
        *_front_doors(),
        *well_known_routes(identity, mount="/oidc.ashx"),
        Mount("/oidc.ashx", app=identity),
        Mount("/admin", app=console),
        Mount("/api", app=linen),
        Mount("/app", app=linen_web),
        Mount("/bridge-sim", app=mounted_simulator(runtime).app),
        Mount("", app=platform),
    ]
    app = LayeredStarlette(
        routes=routes,
        front=(CATALOGUE_PATH, catalogue_answer(platform, metrics)),
        outer=[
            Middleware(AccessLogMiddleware, metrics=metrics),
            Middleware(
                ReadCache,
                changes=runtime.db.changes,
                clock=runtime.clock,
                entries=runtime.settings.read_cache_entries,
                counts=metrics.read_cache,
            ),
        ],
        middleware=[
            Middleware(HeadMiddleware),
            Middleware(NoStoreMiddleware),
            Middleware(RejectNulMiddleware),
            Middleware(
                BodyLimitMiddleware, limit=runtime.settings.max_body_bytes, larger=LARGER_BODIES
            ),
            Middleware(RejectDuplicateKeysMiddleware),
        ],
        exception_handlers={HTTPException: http_exception_response},
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    console.state.oidc.backchannel = app  # the console reaches the IdP in-process
    linen_web.state.oidc.backchannel = app
    return app


def _front_doors() -> list[BaseRoute]:
    """A web app's bare mount (``/admin``, ``/app``) goes to its pages, and ``/`` to the
    console's: an address typed by hand finds a page rather than the API's 404."""

    def to(target: str) -> Callable[[Request], Awaitable[Response]]:
        async def redirect(_request: Request) -> Response:
            return RedirectResponse(target, status_code=307)

        return redirect

    return [
        Route("/", to("/admin/"), methods=["GET"]),
        Route("/admin", to("/admin/"), methods=["GET"]),
        Route("/app", to("/app/"), methods=["GET"]),
    ]


# Each application on its own, e.g. `uvicorn --factory switchboard.app:identity_app`. They share
# the database (and so tenants, users and keys) with every other process of the deployment.


def _standalone(app: FastAPI) -> FastAPI:
    app.add_middleware(RejectDuplicateKeysMiddleware)
    limit = app.state.runtime.settings.max_body_bytes
    app.add_middleware(BodyLimitMiddleware, limit=limit, larger=LARGER_BODIES)
    app.add_middleware(RejectNulMiddleware)
    app.add_middleware(NoStoreMiddleware)
    app.add_middleware(HeadMiddleware)
    return app


def identity_app(settings: Settings | None = None) -> FastAPI:
    """The identity provider alone (serve it under ``/oidc.ashx``)."""
    return _standalone(create_identity_app(Runtime(settings or Settings())))


def platform_app(settings: Settings | None = None) -> FastAPI:
    """The platform API and its workers alone."""
    runtime = Runtime(settings or Settings())
    runtime.workers.extend(all_workers())
    app = create_platform_app(runtime, extra_openapi=create_identity_app(runtime))
    return _standalone(app)


def linen_app(settings: Settings | None = None) -> FastAPI:
    """The linen portal alone (serve it under ``/api``)."""
    app = create_linen_app(Runtime(settings or Settings()))
    return _standalone(app)
