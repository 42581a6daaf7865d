"""Pausing Python's cyclic garbage collector while start-up loads the logs.

Loading tens of thousands of partitions builds hundreds of thousands of long-lived objects and
no garbage cycles. With the collector on, every 700 of them start a young collection and every
7,000 an older one, and a full pass over the whole heap (the logs loaded so far included)
comes every few tens of thousands: 20 to 30% of a clean start-up's CPU time, spent finding
nothing. Paused, the objects are collected once, at the end: one pass over the young and
middle generations moves what survives to the oldest (what those collections would have done to
it anyway, in one traversal instead of two), and still within start-up, so its cost is counted
there; full passes over the heap come later, at the collector's own pace.

Invariant upheld: the collector is left as it was found (a pause inside a pause, or with the
collector already off, changes nothing), whatever the paused code raises. Reference counting
goes on freeing everything that is not in a cycle. Nothing decided here depends on it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_resume = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the body with the cyclic collector off (if it was on), then collect the young
    generations once and turn it back on."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.collect(1)
                gc.enable()
