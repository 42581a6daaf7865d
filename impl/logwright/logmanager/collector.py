"""Pausing Python's cyclic garbage collector while start-up loads the logs.

Loading tens of thousands of partitions builds hundreds of thousands of long-lived objects and
no garbage cycles. With the collector on, every 700 of them start a young collection and every
7,000 an older one, and a full pass over the whole heap (the logs loaded so far included)
comes every few tens of thousands: 20 to 30% of a clean start-up's CPU time, spent finding
nothing. Paused, one collection of the young and middle generations at the end moves what
survives into the oldest generation, where full passes over the heap find it later, at the
collector's own pace, and frees the garbage cycles made during the pause: a few percent of a
start-up of 10,000 partitions. (Moving the generations there with ``gc.freeze()`` and
``gc.unfreeze()`` skipped that pass, but hid the objects moved from the collector's count of
what the oldest generation gained, which decides when a full pass comes: the garbage cycles
moved with them piled up uncollected. A fuzz campaign, with a broker start-up every few
examples, held 1.1 million of them after 300 examples and grew to 1.8 GB in half an hour.)

Invariant upheld: the collector is left as it was found (a pause inside a pause, or with the
collector already off, changes nothing; objects frozen before stay frozen, none frozen after),
whatever the paused code raises. Reference counting goes on freeing everything that is not in
a cycle. Nothing decided here depends on it.
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
    """Run the body with the cyclic collector off (if it was on), then collect the young and
    middle generations (what survives goes into the oldest one) and turn it back on."""
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
