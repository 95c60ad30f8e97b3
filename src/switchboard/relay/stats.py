"""The relay's counters: one stats line every 30 s (spec 8.2.6) and the same as Prometheus
metrics."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

FAILURE_REASONS = ("no_certificate", "timeout", "error")
ACL_PATHS = ("udp", "tcp", "tls")


@dataclass
class RelayStats:
    """Counters since start. ``acl_blocked`` for udp and tcp comes from the packet filter's
    counters; everything else from the guard."""

    acl_blocked: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACL_PATHS, 0))
    tls_accepted: int = 0
    handshake_failures: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(FAILURE_REASONS, 0)
    )
    cert_reloads: int = 0
    auto_blocks: int = 0
    blocked_rejects: int = 0
    quota_rejects: dict[str, int] = field(default_factory=lambda: {"tls": 0, "turn": 0})
    cap_rejects: dict[str, int] = field(default_factory=lambda: {"tls": 0, "tcp": 0})
    binding_rate_drops: int = 0
    relay_to_self_drops: int = 0
    currently_blocked: int = 0

    @property
    def handshake_failures_total(self) -> int:
        return sum(self.handshake_failures.values())

    def line(self) -> str:
        acl = " ".join(f"{path}={self.acl_blocked[path]}" for path in ACL_PATHS)
        reasons = " ".join(f"{r}={self.handshake_failures[r]}" for r in FAILURE_REASONS)
        return (
            f"relay stats: acl_blocked {acl} total={sum(self.acl_blocked.values())}"
            f" | tls_accepted={self.tls_accepted}"
            f" handshake_failures={self.handshake_failures_total} ({reasons})"
            f" cert_reloads={self.cert_reloads} auto_blocks={self.auto_blocks}"
            f" currently_blocked={self.currently_blocked} blocked_rejects={self.blocked_rejects}"
            f" | quota_rejects tls={self.quota_rejects['tls']} turn={self.quota_rejects['turn']}"
            f" binding_rate_drops={self.binding_rate_drops}"
            f" relay_to_self_drops={self.relay_to_self_drops}"
            f" | cap_rejects tls={self.cap_rejects['tls']} tcp={self.cap_rejects['tcp']}"
        )


class StatsCollector(Collector):
    """Exposes a RelayStats as ``switchboard_relay_*`` metrics, read at scrape time."""

    def __init__(self, refresh: Callable[[], RelayStats]) -> None:
        self.refresh = refresh

    def collect(self) -> Iterator[Metric]:
        stats = self.refresh()
        acl = CounterMetricFamily(
            "switchboard_relay_acl_blocked", "Connections or packets dropped by the operator ACL",
            labels=["path"],
        )  # fmt: skip
        for path in ACL_PATHS:
            acl.add_metric([path], stats.acl_blocked[path])
        yield acl
        yield CounterMetricFamily(
            "switchboard_relay_tls_accepted", "TLS handshakes completed", value=stats.tls_accepted
        )
        failures = CounterMetricFamily(
            "switchboard_relay_tls_handshake_failures", "Failed TLS handshakes", labels=["reason"]
        )
        for reason in FAILURE_REASONS:
            failures.add_metric([reason], stats.handshake_failures[reason])
        yield failures
        yield CounterMetricFamily(
            "switchboard_relay_cert_reloads", "Certificate reloads", value=stats.cert_reloads
        )
        yield CounterMetricFamily(
            "switchboard_relay_tls_auto_blocks", "IPs auto-blocked", value=stats.auto_blocks
        )
        yield CounterMetricFamily(
            "switchboard_relay_tls_blocked_rejects",
            "Connections refused because their IP is auto-blocked",
            value=stats.blocked_rejects,
        )
        quota = CounterMetricFamily(
            "switchboard_relay_quota_rejects", "Connections over the per-IP quota", labels=["path"]
        )
        for path, count in stats.quota_rejects.items():
            quota.add_metric([path], count)
        yield quota
        cap = CounterMetricFamily(
            "switchboard_relay_cap_rejects",
            "Connections refused at the guard's cap on connections held at once",
            labels=["path"],
        )
        for path, count in stats.cap_rejects.items():
            cap.add_metric([path], count)
        yield cap
        yield CounterMetricFamily(
            "switchboard_relay_binding_rate_drops",
            "Unauthenticated STUN binding requests over the per-IP rate",
            value=stats.binding_rate_drops,
        )
        yield CounterMetricFamily(
            "switchboard_relay_to_self_drops",
            "Relayed packets to this host's own addresses dropped by the packet filter",
            value=stats.relay_to_self_drops,
        )
        yield GaugeMetricFamily(
            "switchboard_relay_tls_blocked_ips", "IPs currently auto-blocked",
            value=stats.currently_blocked,
        )  # fmt: skip


class StatsTicker:
    """Decides, on the injected clock, when the next stats line is due."""

    def __init__(self, interval: float, start: dt.datetime) -> None:
        self.interval = dt.timedelta(seconds=interval)
        self.next_at = start + self.interval

    def due(self, now: dt.datetime) -> bool:
        if now < self.next_at:
            return False
        while self.next_at <= now:
            self.next_at += self.interval
        return True
