"""Prometheus metrics of one process: request latency observed as requests pass, and figures
read from the database at scrape time (so every process of a deployment reports the same
calls, deliveries and lateness, whichever of them did the work)."""

from __future__ import annotations

import datetime as dt
import itertools
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Gauge, Info, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy.pool import QueuePool

from switchboard import __version__
from switchboard.kit.build import build_id
from switchboard.kit.readcache import Counts

if TYPE_CHECKING:
    from switchboard.runtime import Runtime

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
Labels = tuple[str, str, int]


class RequestLatency(Collector):
    """The request latency histogram by method, route template and status.

    Observed on every request, so counted in plain lists (one bisect and two additions, on the
    event loop's thread) and handed to prometheus_client as a histogram family at scrape time:
    its own ``Histogram`` takes a lock and walks the buckets per observation, about 1.4 us of
    the 28 us a bare request costs on the reference machine (issue 19).
    """

    name = "switchboard_http_request_duration_seconds"
    documentation = "HTTP request latency by method, route template and status"

    def __init__(self) -> None:
        self._series: dict[Labels, list[float]] = {}
        self._bounds = [*(repr(bound) for bound in LATENCY_BUCKETS), "+Inf"]

    def series(self, labels: Labels) -> list[float]:
        """The counts of ``labels``: per bucket (the last one is +Inf), then the sum."""
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        return series

    def observe(self, labels: Labels, seconds: float) -> None:
        series = self._series.get(labels) or self.series(labels)
        series[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        series[-1] += seconds

    def collect(self) -> Iterator[HistogramMetricFamily]:
        family = HistogramMetricFamily(
            self.name, self.documentation, labels=("method", "route", "status")
        )
        for (method, route, status), series in list(self._series.items()):
            counts = itertools.accumulate(series[:-1])
            family.add_metric(
                [method, route, str(status)],
                list(zip(self._bounds, counts, strict=True)),
                sum_value=series[-1],
            )
        yield family


class ReadCacheCounts(Collector):
    """The read cache's answers (decision 0960): from the cache, made afresh, and stored."""

    def __init__(self, counts: Counts) -> None:
        self.counts = counts

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "switchboard_read_cache_answers",
            "Authenticated GET answers by outcome: hit (from the read cache), miss (made by "
            "the application), kept (misses stored for repetition)",
            labels=("outcome",),
        )
        family.add_metric(["hit"], self.counts.hits)
        family.add_metric(["miss"], self.counts.misses)
        family.add_metric(["kept"], self.counts.kept)
        yield family


@dataclass(frozen=True, slots=True)
class Backlog:
    """What the platform's tables hold at scrape time: calls and webhook deliveries by status,
    the failed delivery attempts, and the oldest due delivery and call (``None``: none due)."""

    calls: Sequence[tuple[str, int]]
    deliveries: Sequence[tuple[str, int]]
    delivery_failures: int
    oldest_delivery: dt.datetime | None
    oldest_call: dt.datetime | None


# Reads the backlog in one read-only transaction; given by the application (the platform's
# ``read_backlog``), so that operations know nothing of the features' tables.
ReadBacklog = Callable[["Runtime"], Awaitable[Backlog]]


class Metrics:
    def __init__(self, *, backlog: ReadBacklog) -> None:
        self._backlog = backlog
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = RequestLatency()
        r.register(self.requests)
        self.read_cache = Counts()
        r.register(ReadCacheCounts(self.read_cache))
        self.calls = Gauge("switchboard_calls", "Calls by status", ("status",), registry=r)
        self.deliveries = Gauge(
            "switchboard_webhook_deliveries",
            "Webhook deliveries in the outbox by status (pending is the backlog)",
            ("status",),
            registry=r,
        )
        self.delivery_failures = Gauge(
            "switchboard_webhook_failed_attempts",
            "Webhook delivery attempts that failed (no 2xx answer), within the log retention",
            registry=r,
        )
        self.delivery_lag = Gauge(
            "switchboard_webhook_lag_seconds",
            "How long the oldest due webhook delivery has been waiting (0 when none)",
            registry=r,
        )
        self.dispatch_lateness = Gauge(
            "switchboard_dispatch_lateness_seconds",
            "How far past its due time the oldest undispatched call is (0 when none)",
            registry=r,
        )
        self.pool = Gauge(
            "switchboard_db_pool_connections",
            "Database pool connections by state",
            ("state",),
            registry=r,
        )
        self.build = Info("switchboard_build", "Version and build of the running code", registry=r)
        self.build.info({"version": __version__, "build": build_id()})

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.observe((method, route, status), seconds)

    def latency_series(self, method: str, route: str, status: int) -> list[float]:
        """The latency series of one method, route and status, for a route that always answers
        the same status (the catalogue) and counts into it itself, as ``RequestLatency.observe``
        does: ``series[bisect_left(LATENCY_BUCKETS, seconds)] += 1; series[-1] += seconds``."""
        return self.requests.series((method, route, status))

    async def scrape(self, runtime: Runtime) -> bytes:
        await self._read_database(runtime)
        return generate_latest(self.registry)

    async def _read_database(self, runtime: Runtime) -> None:
        now = runtime.clock.now()
        backlog = await self._backlog(runtime)
        self.calls.clear()
        for status, count in backlog.calls:
            self.calls.labels(status).set(count)
        self.deliveries.clear()
        for status, count in backlog.deliveries:
            self.deliveries.labels(status).set(count)
        self.delivery_failures.set(backlog.delivery_failures)
        self.delivery_lag.set(_age(now, backlog.oldest_delivery))
        self.dispatch_lateness.set(_age(now, backlog.oldest_call))
        pool = runtime.db.engine.pool
        if isinstance(pool, QueuePool):
            self.pool.labels("size").set(pool.size())
            self.pool.labels("checked_out").set(pool.checkedout())
            self.pool.labels("overflow").set(max(pool.overflow(), 0))


def _age(now: dt.datetime, since: dt.datetime | None) -> float:
    if since is None:
        return 0.0
    if since.tzinfo is None:  # an aggregate over SQLite comes back naive UTC
        since = since.replace(tzinfo=dt.UTC)
    return max((now - since).total_seconds(), 0.0)
