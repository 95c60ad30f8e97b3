"""The bandwidth detector (spec 6.2 rules 2-3, 8.1): a pure rule over reports and a clock.

A peer is stressed by a report when its outgoing bitrate is below ``StressBwMbpsThreshold``,
its loss is above ``StressLossPctThreshold`` (judged only once at least 50 packets were sent) or
its RTT is above ``StressRttMsThreshold`` (judged only on a non-zero measurement). The room is
degraded when at least ``MinStressedPeers`` humans were stressed inside ``StressWindowSec``;
it then stays quiet for ``BwDegradedSuppressSec``. The tunables are passed on every evaluation,
so a tenant's change takes effect on the next report.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from switchboard.tenants.config import SFU_TUNABLES

LOSS_MIN_PACKETS = 50


@dataclass(frozen=True, slots=True)
class Report:
    abr_mbps: float
    loss_pct: float
    packets_sent: int
    rtt_ms: float


@dataclass(frozen=True, slots=True)
class Tunables:
    window_sec: float
    min_stressed: int
    suppress_sec: float
    bw_mbps: float
    loss_pct: float
    rtt_ms: float

    @classmethod
    def of(cls, sfu: Mapping[str, float]) -> Tunables:
        """From a tenant's (already clamped) ``Phone:Sfu:*`` values; missing keys default."""

        def value(key: str) -> float:
            tunable = SFU_TUNABLES[key]
            return tunable.snap(sfu.get(key, tunable.default))

        return cls(
            window_sec=value("StressWindowSec"),
            min_stressed=int(value("MinStressedPeers")),
            suppress_sec=value("BwDegradedSuppressSec"),
            bw_mbps=value("StressBwMbpsThreshold"),
            loss_pct=value("StressLossPctThreshold"),
            rtt_ms=value("StressRttMsThreshold"),
        )


def stressed(report: Report, tunables: Tunables) -> bool:
    if report.abr_mbps < tunables.bw_mbps:
        return True
    if report.packets_sent >= LOSS_MIN_PACKETS and report.loss_pct > tunables.loss_pct:
        return True
    return report.rtt_ms > 0 and report.rtt_ms > tunables.rtt_ms


@dataclass(frozen=True, slots=True)
class Degraded:
    stressed_count: int
    trigger_peer_id: str
    window_sec: int
    abr_mbps: float  # minimum outgoing bitrate among the stressed reports
    loss_pct: float  # peak loss
    rtt_ms: float  # peak RTT


@dataclass
class Detector:
    """One room's detector: the last stressed report of each peer, and the last firing."""

    _stress: dict[str, tuple[dt.datetime, Report]] = field(default_factory=dict)
    _fired_at: dt.datetime | None = None

    def forget(self, peer_id: str) -> None:
        self._stress.pop(peer_id, None)

    def is_stressed(self, peer_id: str) -> bool:
        return peer_id in self._stress

    def note(self, *, peer_id: str, report: Report | None, at: dt.datetime) -> None:
        """Another process's peer was found stressed by ``report`` at ``at``, or clear (None):
        the room's detectors in every process hold the same stressed peers."""
        if report is None:
            self._stress.pop(peer_id, None)
        else:
            self._stress[peer_id] = (at, report)

    def fired(self, at: dt.datetime) -> None:
        """The room fired in another process: quiet here too until the suppression ends."""
        self._fired_at = at

    def evaluate(
        self, *, peer_id: str, report: Report, now: dt.datetime, tunables: Tunables
    ) -> Degraded | None:
        """Record ``peer_id``'s report; the degraded finding when the room fires now."""
        if stressed(report, tunables):
            self._stress[peer_id] = (now, report)
        else:
            self._stress.pop(peer_id, None)
        horizon = now - dt.timedelta(seconds=tunables.window_sec)
        for stale in [p for p, (at, _) in self._stress.items() if at < horizon]:
            del self._stress[stale]
        if len(self._stress) < tunables.min_stressed:
            return None
        if self._fired_at is not None and now - self._fired_at < dt.timedelta(
            seconds=tunables.suppress_sec
        ):
            return None
        self._fired_at = now
        reports = [r for _, r in self._stress.values()]
        return Degraded(
            stressed_count=len(reports),
            trigger_peer_id=peer_id,
            window_sec=int(tunables.window_sec),
            abr_mbps=min(r.abr_mbps for r in reports),
            loss_pct=max(r.loss_pct for r in reports),
            rtt_ms=max(r.rtt_ms for r in reports),
        )
