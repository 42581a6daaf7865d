"""Recorded storage traces (traces/storage/*.json) replayed through the storage harness.

Each trace is a fuzz-found sequence that once broke an invariant or crashed the broker; it must
now run clean, with every invariant checked after every step.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from logwright.verify.storage_oracle import StorageHarness

TRACES = sorted((Path(__file__).parents[1] / "traces" / "storage").glob("*.json"))


def apply(h: StorageHarness, step: dict[str, Any]) -> None:
    """Run one recorded step (without its crash point)."""
    op = step["op"]
    tp = h.tps[step.get("p", 0)]
    if op == "produce":
        h.produce(tp, step["count"])
    elif op == "delete_records":
        h.delete_records(tp, step["fraction"])
    elif op == "truncate":
        h.truncate(tp, step["fraction"])
    elif op == "flush":
        h.flush(tp)
    elif op == "advance_high_watermark":
        h.advance_high_watermark(tp, step["step"])
    elif op == "pass_time":
        h.pass_time(step["delta_ms"])
    elif op == "clean_restart":
        h.clean_restart()
    elif op == "power_loss":
        h.crash_and_restart()
    else:
        raise ValueError(f"unknown trace op {op!r}")


def replay(trace: dict[str, Any]) -> StorageHarness:
    """Replay a trace, checking every invariant after every step."""
    h = StorageHarness(**trace["harness"])
    h.check()
    for step in trace["steps"]:
        h.run(functools.partial(apply, h, step), step.get("crash"))
        h.check()
    return h


def test_there_are_traces() -> None:
    assert TRACES, "traces/storage/ holds the recorded regressions"


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_trace_replays_clean(path: Path) -> None:
    h = replay(json.loads(path.read_text()))
    assert h.checks > 0
