"""The garbage collector in a long-running process: what startup built is set aside once.

A server imports and builds a few hundred thousand objects (modules, the applications and their
routes, schemas, SQLAlchemy's metadata) that live as long as the process. CPython's full
collection walks every tracked object, so each one of them paused the event loop for 80 to
150 ms on the reference machine, in the middle of requests (decision 0990). ``settle`` collects
once and moves every object alive at that point into the permanent generation
(``gc.freeze``): later full collections walk only what the process made since.
"""

from __future__ import annotations

import functools
import gc


@functools.cache  # once per process
def settle() -> None:
    """Collect, then freeze every object alive now; once per process (a later call, e.g. from a
    second application started in the same process, does nothing, so what it builds can still
    be collected when it goes)."""
    gc.collect()
    gc.freeze()
