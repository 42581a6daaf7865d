"""Recorded storage traces (traces/storage/*.json) replayed through the storage harness.

Each trace is a fuzz-found sequence that once broke an invariant or crashed the broker; it must
now run clean, with every invariant checked after every step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from logwright.verify.storage_oracle import StorageHarness

TRACES = sorted((Path(__file__).parents[1] / "traces" / "storage").glob("*.json"))


def replay(trace: dict[str, Any]) -> StorageHarness:
    h = StorageHarness(**trace["harness"])
    h.check()
    for step in trace["steps"]:
        op = step["op"]
        crash = step.get("crash")
        tp = h.tps[step["p"]] if "p" in step else None
        if op == "produce":
            h.run(lambda: h.produce(tp, step["count"]), crash)  # type: ignore[arg-type]
        elif op == "delete_records":
            h.run(lambda: h.delete_records(tp, step["fraction"]), crash)  # type: ignore[arg-type]
        elif op == "truncate":
            h.run(lambda: h.truncate(tp, step["fraction"]), crash)  # type: ignore[arg-type]
        elif op == "flush":
            h.run(lambda: h.flush(tp), crash)  # type: ignore[arg-type]
        elif op == "advance_high_watermark":
            h.advance_high_watermark(tp, step["step"])  # type: ignore[arg-type]
        elif op == "pass_time":
            h.run(lambda: h.pass_time(step["delta_ms"]), crash)
        elif op == "clean_restart":
            h.run(h.clean_restart, crash)
        elif op == "power_loss":
            h.crash_and_restart()
        else:
            raise ValueError(f"unknown trace op {op!r}")
        h.check()
    return h


def test_there_are_traces() -> None:
    assert TRACES, "traces/storage/ holds the recorded regressions"


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_trace_replays_clean(path: Path) -> None:
    h = replay(json.loads(path.read_text()))
    assert h.checks > 0
