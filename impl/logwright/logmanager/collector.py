"""Pausing Python's cyclic garbage collector while start-up loads the logs.

Loading tens of thousands of partitions builds hundreds of thousands of long-lived objects and
no garbage cycles. With the collector on, every 700 of them start a young collection and every
7,000 an older one, and a full pass over the whole heap (the logs loaded so far included)
comes every few tens of thousands: 20 to 30% of a clean start-up's CPU time, spent finding
nothing. Paused, the objects are put in the oldest generation at the end, where a collection of
the young and middle generations would have moved what survives (everything, at start-up), and
where full passes over the heap find them later, at the collector's own pace, as they would
have: ``gc.freeze()`` then ``gc.unfreeze()`` moves the whole young and middle generations
there at once, without the pass over them that would find nothing. A garbage cycle made during
the pause is freed by the next full collection instead of at the end of the pause. When
objects are frozen already (a process that called ``gc.freeze()`` itself, say before forking),
they must stay frozen: one collection of the young and middle generations then does the move,
still within start-up, so its cost is counted there.

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
    """Run the body with the cyclic collector off (if it was on), then move what the young and
    middle generations hold into the oldest one and turn it back on."""
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
                if gc.get_freeze_count() == 0:
                    gc.freeze()  # every generation into the permanent one...
                    gc.unfreeze()  # ...and all of it into the oldest
                else:
                    gc.collect(1)
                gc.enable()
