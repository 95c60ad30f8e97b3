"""The bridge bench reads RTP sequence numbers as RFC 3550 writes them: starting anywhere and
wrapping at 2^16, so a stream that wraps in the window is not a loss."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_bench() -> ModuleType:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        return importlib.import_module("bench_bridge")
    finally:
        sys.path.remove(str(ROOT / "bench"))


bench = load_bench()
MS = 1_000_000


def stream(ssrc: int, seqs: list[int]) -> list[tuple[int, int, int]]:
    return [(ssrc, seq, n * 20 * MS) for n, seq in enumerate(seqs)]


def test_a_stream_that_wraps_loses_only_its_missing_packets() -> None:
    level = bench.Level(calls=2)
    packets = stream(1, [65533, 65534, 65535, 0, 2, 3]) + stream(2, [100, 101, 102])
    bench.analyse(level, packets, 0.06)
    assert level.streams == 2
    assert level.seq_lost == 1  # 1, and only 1
    assert level.p99_ms == 0.0  # every consecutive pair 20 ms apart


def test_a_packet_that_arrives_late_is_not_a_gap() -> None:
    level = bench.Level(calls=1)
    packets = [(1, 10, 0), (1, 12, 40 * MS), (1, 11, 41 * MS), (1, 13, 60 * MS)]
    bench.analyse(level, packets, 0.08)
    assert level.seq_lost == 0
