"""``kit.heap.settle``: what a long-running process does with its garbage collector once its
startup is built (decisions 0990 and 0998), seen in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

from switchboard.kit import heap

PROBE = """
import gc, json
from switchboard.kit import heap
before = gc.get_threshold()
heap.settle()
after = gc.get_threshold()
gc.set_threshold(1, 1, 1)
heap.settle()  # once per process: a second call changes nothing
print(json.dumps([before, after, gc.get_threshold(), gc.get_freeze_count()]))
"""


def test_settle_freezes_startup_and_raises_the_young_threshold_once() -> None:
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    before, after, again, frozen = json.loads(run.stdout)
    assert before == [700, 10, 10]  # CPython's defaults
    assert tuple(after) == heap.THRESHOLDS
    assert again == [1, 1, 1]
    assert frozen > 1_000  # what the interpreter has built so far, set aside from collections
