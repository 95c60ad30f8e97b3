"""The garbage collector in a long-running process: what startup built is set aside once.

A server imports and builds a few hundred thousand objects (modules, the applications and their
routes, schemas, SQLAlchemy's metadata) that live as long as the process. CPython's full
collection walks every tracked object, so each one of them paused the event loop for 80 to
150 ms on the reference machine, in the middle of requests (decision 0990). ``settle`` collects
once and moves every object alive at that point into the permanent generation
(``gc.freeze``): later full collections walk only what the process made since. It also raises
the youngest generation's threshold (decision 0998): a server holds a few hundred live objects
for each request in flight, so at CPython's default of 700 nearly every request outlived a young
collection or two and paid for being walked by them.
"""

from __future__ import annotations

import functools
import gc

# Young collections every 10,000 net new container objects instead of 700; the older
# generations keep their defaults (decision 0998).
THRESHOLDS = (10_000, 10, 10)


@functools.cache  # once per process
def settle() -> None:
    """Collect, then freeze every object alive now; once per process (a later call, e.g. from a
    second application started in the same process, does nothing, so what it builds can still
    be collected when it goes); then sets ``THRESHOLDS``."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
