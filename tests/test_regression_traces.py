"""Every trace in traces/regressions/ (a failure ``logwright fuzz`` found, shrunk and saved) is
replayed step for step by ``logwright.verify.cluster_run.replay``, every property checked after
every step: a new file is a new test.

A trace whose failure is fixed must replay clean. A trace of a known open defect carries an
``xfail`` field naming it and is a strict expected failure: it must still fail, and the day the
defect is fixed the suite says so and the field goes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from logwright.conformance.refinement import RefinementViolation
from logwright.errors import KafkaError
from logwright.verify.cluster_run import OPS, PropertyViolated, replay
from logwright.verify.traces import check_paths

DIR = Path(__file__).parents[1] / "traces" / "regressions"
TRACES = sorted(DIR.glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    trace: dict[str, Any] = json.loads(path.read_text())
    return trace


def _param(path: Path) -> Any:
    reason = _load(path).get("xfail")
    # A known defect fails as a property, or as the client's error a settled cluster must not
    # give (a consumer that finds no leader after repair_and_settle).
    marks = [pytest.mark.xfail(strict=True, raises=(PropertyViolated, RefinementViolation,
                                                    KafkaError), reason=reason)] \
        if reason else []
    return pytest.param(path, marks=marks, id=path.stem)


def test_there_are_regression_traces() -> None:
    assert TRACES, "traces/regressions/ holds the failures the fuzzer found"


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_trace_is_well_formed(path: Path) -> None:
    """Each file says what it found, with which seed, and its status; its steps are ops the
    replay knows."""
    trace = _load(path)
    for key in ("found_by", "what", "status", "seed", "cluster", "steps"):
        assert key in trace, f"{path.name} has no {key!r}"
    assert trace["status"].startswith(("fixed", "known defect")), trace["status"]
    assert trace["status"].startswith("known defect") == ("xfail" in trace)
    for step in trace["steps"]:
        assert step["op"] in OPS
        if step["op"] == "crash_during":
            assert step["step"]["op"] in OPS


@pytest.mark.parametrize("path", [_param(p) for p in TRACES])
def test_trace_replays_clean(path: Path, tmp_path: Path) -> None:
    """A file with ``check_trace`` (a failure the trace checker found, the properties having
    held) also records the replay's trace, which must check clean."""
    trace = _load(path)
    recorded = tmp_path / "replay.jsonl"
    if trace.get("check_trace"):
        trace = {**trace, "cluster": {**trace["cluster"], "trace": str(recorded)}}
    run = replay(trace)
    assert run.steps, "the trace ran its steps"
    if trace.get("check_trace"):
        run.cluster.close()
        report = check_paths([recorded])
        assert report.ok, report.summary()
