"""What keeps ``traces check`` cheap per event leaves its verdicts as they were."""

from __future__ import annotations

import gc
from pathlib import Path

from logwright.verify.traces import CheckReport, check_paths

TRACES = Path(__file__).resolve().parent.parent / "traces"
OPEN = Path(__file__).resolve().parent / "data" / "conformance_open"


def test_a_check_leaves_no_reference_cycle_behind() -> None:
    """The check runs with the cyclic collector paused: a cycle made during it (an exception
    kept in a local, a function that calls itself through its closure) would hold the frames
    above it, and every event they see, until a later full collection. traces/checker/ has the
    refused restarts and the restarts outside the model that once made such cycles."""
    check_paths([TRACES, OPEN])  # imports and caches first
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        report = check_paths([TRACES, OPEN], CheckReport(track_states=True))
        del report
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()


def test_the_collector_is_on_again_after_a_check() -> None:
    assert gc.isenabled()
    check_paths([TRACES / "corpus"])
    assert gc.isenabled()
