"""The process-wide objects every sub-application shares, and the request-scoped session."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.bearer import Authenticator
from switchboard.auth.keys import Keyring
from switchboard.auth.passwords import Passwords
from switchboard.auth.tokens import TokenIssuer
from switchboard.kit import heap
from switchboard.kit.clock import Clock, SystemClock
from switchboard.kit.crypto import SecretBox
from switchboard.kit.db import Database
from switchboard.kit.destinations import parse_networks
from switchboard.settings import Settings

log = logging.getLogger("switchboard")

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

Worker = Callable[["Runtime", asyncio.Event], Coroutine[Any, Any, None]]
Purge = Callable[[AsyncSession, dt.datetime], Awaitable[int]]

PURGE_EVERY_SECONDS = 3600.0


def purging_worker(purge: Purge, *, what: str, logger: str) -> Worker:
    """A worker that runs ``purge`` (one transaction, the runtime's clock) once an hour until
    stopped, logging how many ``what`` it deleted; a failure is logged and retried next hour."""
    log = logging.getLogger(logger)

    async def worker(runtime: Runtime, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                async with runtime.db.transaction() as session:
                    count = await purge(session, runtime.clock.now())
                if count:
                    log.info("purged %d %s", count, what)
            except Exception:
                log.exception("purge of %s failed", what)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=PURGE_EVERY_SECONDS)

    return worker


class Runtime:
    """Settings, clock, database, keyring and background workers of one process."""

    def __init__(self, settings: Settings, *, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.db = Database(settings.resolved_database_url, pool_size=settings.database_pool_size)
        self.box = SecretBox(settings.secret_key)
        self.keyring = Keyring(self.box, self.clock)
        self.passwords = Passwords(
            time_cost=settings.argon2_time_cost,
            memory_kib=settings.argon2_memory_kib,
            parallelism=settings.argon2_parallelism,
        )
        self.tokens = TokenIssuer(
            keyring=self.keyring,
            clock=self.clock,
            access_ttl=settings.access_token_ttl,
            refresh_ttl=settings.refresh_token_ttl,
        )
        self.authenticator = Authenticator(
            db=self.db,
            keyring=self.keyring,
            clock=self.clock,
            scheme=settings.public_scheme,
            primary_domain=settings.primary_domain,
            jwks_ttl=settings.external_jwks_ttl,
            api_key_cache_seconds=settings.api_key_cache_seconds,
            issuer_allow_private=parse_networks(settings.issuer_allow_private),
        )
        self.workers: list[Worker] = []
        # Set by an application that serves from a read cache: on PostgreSQL it needs the LISTEN
        # connection that tells it of other processes' commits (kit/changes.py). Workers need it
        # too (their idle polls skip an unchanged database, decision 0222).
        self.watch_changes = False
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._started = 0

    async def start(self, *, run_workers: bool | None = None) -> None:
        self._started += 1
        if self._started > 1:
            return
        if self.settings.database_url == "":
            self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        self._stop.clear()
        workers = run_workers if run_workers is not None else self.settings.run_workers
        if self.watch_changes or (workers and self.workers):  # the view of other writers
            self._tasks.append(asyncio.create_task(self.db.changes.listen(self._stop)))
        if workers:
            for worker in self.workers:
                self._tasks.append(asyncio.create_task(worker(self, self._stop)))
        heap.settle()  # the process's startup is built: set it aside from full collections

    async def stop(self) -> None:
        self._started -= 1
        if self._started > 0:
            return
        self._stop.set()
        for task in self._tasks:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), timeout=5)
            if not task.done():
                task.cancel()
        self._tasks.clear()
        await self.db.dispose()

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        await self.start()
        try:
            yield
        finally:
            await self.stop()


T = TypeVar("T")


class PerRuntime(Generic[T]):
    """One object of a feature's own per process: made by ``make(runtime)`` on first use and
    kept as long as the runtime lives. A feature's caches live here rather than on the runtime,
    which imports no feature."""

    def __init__(self, make: Callable[[Runtime], T]) -> None:
        self._make = make
        self._made: weakref.WeakKeyDictionary[Runtime, T] = weakref.WeakKeyDictionary()

    def __call__(self, runtime: Runtime) -> T:
        made = self._made.get(runtime)
        if made is None:
            made = self._made[runtime] = self._make(runtime)
        return made

    def replace(self, runtime: Runtime, made: T) -> None:
        """Use ``made`` for ``runtime`` from now on (a test's own fetcher, say)."""
        self._made[runtime] = made

    def pop(self, runtime: Runtime) -> T | None:
        """Forget the runtime's object, if one was made, and hand it back (to be closed)."""
        return self._made.pop(runtime, None)


async def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


async def prepare_bearer(runtime: RuntimeDep, request: Request) -> None:
    """Fetch what checking the request's bearer needs from the network (an external issuer's
    keys) before any transaction of the request opens (decision 0029). ``get_session`` depends
    on it, so it runs first whatever order an endpoint names its dependencies in."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token:
        await runtime.authenticator.prepare(request.headers.get("host", ""), token)


Prepared = Annotated[None, Depends(prepare_bearer)]


async def get_session(
    runtime: RuntimeDep, request: Request, _bearer: Prepared
) -> AsyncIterator[AsyncSession]:
    """One request, one transaction: committed before the response is sent."""
    async with runtime.db.transaction(read_only=request.method in SAFE_METHODS) as session:
        yield session


Session = Annotated[AsyncSession, Depends(get_session, scope="function")]
