"""Ports for the test servers, sipp ends and relays that tests start.

A port is free for TCP and UDP on every address and is drawn from a slice of 10000-19999 that
belongs to this xdist worker: below the kernel's ephemeral range (32768 and up), so no outgoing
connection of another test can hold it, and apart from the other workers' slices, so no two workers
hand out the same port. ``SWITCHBOARD_TEST_PORTS=20000-24000`` moves the whole range, so that
suites of two checkouts can run side by side on one machine. Within a process, ports are handed
out in turn, so a port given to a process that has not bound it yet is not given again soon.
"""

from __future__ import annotations

import itertools
import os
import random
import socket

FIRST, LAST = (int(p) for p in os.environ.get("SWITCHBOARD_TEST_PORTS", "10000-20000").split("-"))


def _slice() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1"... or "" without xdist
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1")
    index = int(worker[2:]) if worker.startswith("gw") else 0
    size = (LAST - FIRST) // max(count, 1)
    return range(FIRST + index * size, FIRST + (index + 1) * size)


_SLICE = _slice()
_NEXT = itertools.count(random.randrange(len(_SLICE)))


def _bindable(port: int) -> bool:
    with socket.socket() as tcp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        try:
            tcp.bind(("", port))
            udp.bind(("", port))
        except OSError:
            return False
    return True


def free_port(*, even: bool = False, span: int = 1) -> int:
    """A port free for TCP and UDP; ``even`` for RTP, whose port pairs start even; ``span``
    consecutive ports free from it (sipp's RTP echo binds its media port and the next three)."""
    for _ in range(len(_SLICE)):
        port = _SLICE[next(_NEXT) % len(_SLICE)]
        if (even and port % 2) or port + span > _SLICE.stop:
            continue
        if all(_bindable(p) for p in range(port, port + span)):
            for _ in range(span - 1):  # the span's other ports are not handed out next
                next(_NEXT)
            return port
    raise RuntimeError(f"no free port in {_SLICE}")
