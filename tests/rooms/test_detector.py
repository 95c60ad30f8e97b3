"""The bandwidth detector as a pure rule over an injected clock (spec 6.2, 8.1)."""

from __future__ import annotations

from switchboard.kit.clock import ManualClock
from switchboard.platform.rooms.detector import Detector, Report, Tunables, stressed

DEFAULTS = Tunables.of({})
GOOD = Report(abr_mbps=3.0, loss_pct=0.0, packets_sent=1000, rtt_ms=40)
LOW_BW = Report(abr_mbps=1.0, loss_pct=0.0, packets_sent=1000, rtt_ms=40)


def test_thresholds_and_guards() -> None:
    assert not stressed(GOOD, DEFAULTS)
    assert stressed(LOW_BW, DEFAULTS)
    assert not stressed(Report(1.5, 0, 1000, 40), DEFAULTS)  # "below 1.5" is strict
    assert stressed(Report(3.0, 6.0, 50, 40), DEFAULTS)
    assert not stressed(Report(3.0, 6.0, 49, 40), DEFAULTS)  # loss needs 50 packets sent
    assert not stressed(Report(3.0, 5.0, 1000, 40), DEFAULTS)
    assert stressed(Report(3.0, 0, 1000, 301), DEFAULTS)
    assert not stressed(Report(3.0, 0, 1000, 0), DEFAULTS)  # no RTT measured yet


def test_tunables_default_and_clamp() -> None:
    assert DEFAULTS.window_sec == 30
    assert DEFAULTS.min_stressed == 2
    assert DEFAULTS.suppress_sec == 300
    assert DEFAULTS.bw_mbps == 1.5
    assert DEFAULTS.loss_pct == 5.0
    assert DEFAULTS.rtt_ms == 300
    clamped = Tunables.of(
        {"MinStressedPeers": 1, "StressWindowSec": 9999, "StressRttMsThreshold": 1}
    )
    assert clamped.min_stressed == 2
    assert clamped.window_sec == 600
    assert clamped.rtt_ms == 50


def test_fires_when_two_peers_stressed_within_the_window() -> None:
    clock = ManualClock()
    detector = Detector()
    assert detector.evaluate(peer_id="a", report=LOW_BW, now=clock.now(), tunables=DEFAULTS) is None
    clock.advance(29)
    worse = Report(abr_mbps=0.5, loss_pct=9.0, packets_sent=200, rtt_ms=450)
    fired = detector.evaluate(peer_id="b", report=worse, now=clock.now(), tunables=DEFAULTS)
    assert fired is not None
    assert fired.stressed_count == 2
    assert fired.trigger_peer_id == "b"
    assert fired.window_sec == 30
    assert (fired.abr_mbps, fired.loss_pct, fired.rtt_ms) == (0.5, 9.0, 450)


def test_stress_outside_the_window_does_not_count() -> None:
    clock = ManualClock()
    detector = Detector()
    detector.evaluate(peer_id="a", report=LOW_BW, now=clock.now(), tunables=DEFAULTS)
    clock.advance(31)
    assert detector.evaluate(peer_id="b", report=LOW_BW, now=clock.now(), tunables=DEFAULTS) is None


def test_a_good_report_clears_the_peer() -> None:
    clock = ManualClock()
    detector = Detector()
    detector.evaluate(peer_id="a", report=LOW_BW, now=clock.now(), tunables=DEFAULTS)
    detector.evaluate(peer_id="a", report=GOOD, now=clock.now(), tunables=DEFAULTS)
    assert detector.evaluate(peer_id="b", report=LOW_BW, now=clock.now(), tunables=DEFAULTS) is None


def test_suppressed_then_refires_while_stress_persists() -> None:
    clock = ManualClock()
    detector = Detector()
    detector.evaluate(peer_id="a", report=LOW_BW, now=clock.now(), tunables=DEFAULTS)
    assert detector.evaluate(peer_id="b", report=LOW_BW, now=clock.now(), tunables=DEFAULTS)
    for _ in range(10):
        clock.advance(20)
        detector.evaluate(peer_id="a", report=LOW_BW, now=clock.now(), tunables=DEFAULTS)
        assert (
            detector.evaluate(peer_id="b", report=LOW_BW, now=clock.now(), tunables=DEFAULTS)
            is None
        )
    clock.advance(100)  # 300 s after the firing
    detector.evaluate(peer_id="a", report=LOW_BW, now=clock.now(), tunables=DEFAULTS)
    assert detector.evaluate(peer_id="b", report=LOW_BW, now=clock.now(), tunables=DEFAULTS)


def test_a_tunable_change_applies_on_the_next_evaluation() -> None:
    clock = ManualClock()
    detector = Detector()
    three = Tunables.of({"MinStressedPeers": 3})
    detector.evaluate(peer_id="a", report=LOW_BW, now=clock.now(), tunables=three)
    assert detector.evaluate(peer_id="b", report=LOW_BW, now=clock.now(), tunables=three) is None
    assert detector.evaluate(peer_id="c", report=LOW_BW, now=clock.now(), tunables=three)
