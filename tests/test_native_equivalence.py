"""The compiled build gives the same results as the sources (docs/native.md).

Each test runs the same work twice, in fresh interpreters: once as the tree runs it (the compiled
build under ``make test``, which tests/test_native.py holds active there) and once with
LOGWRIGHT_PURE=1, and requires identical output:

* the trace checker's full report (every count, outside reason, failure, bad input, and the
  fingerprint of every abstract state reached) on every trace of traces/;
* seeded fuzz runs of the simulated cluster with faults: every trace event each seed recorded,
  byte for byte, and the properties' verdicts (summary.json less its timings);
* the narrated demo (produce, a leader's crash, the controller's fail-over): every line.

A wrong annotation in a compiled module raises where the sources run on, and so shows here as a
different report, a different run or an error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from logwright import _native

ROOT = Path(__file__).resolve().parent.parent
REPORT = ("import json, sys\n"
          "from logwright.verify.traces import CheckReport, check_paths\n"
          "from logwright.verify.trace_outputs import report_to_json\n"
          "r = check_paths([sys.argv[1]], CheckReport(track_states=True))\n"
          "r.settle_states()\n"
          "print(json.dumps({'report': json.loads(report_to_json(r)),"
          " 'states': sorted(r.states)}))\n")


def _run(args: list[str], pure: bool, cwd: Path | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != _native.PURE_ENV}
    if pure:
        env[_native.PURE_ENV] = "1"
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=False, cwd=cwd)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def _both(args: list[str], **kw: Path) -> tuple[str, str]:
    return _run(args, pure=False, **kw), _run(args, pure=True, **kw)


def test_the_trace_checker_reports_the_same_on_every_recorded_trace() -> None:
    compiled, pure = _both([sys.executable, "-c", REPORT, str(ROOT / "traces")])
    a, b = json.loads(compiled), json.loads(pure)
    assert a["report"]["events"] > 20_000 and a["report"]["failures"] == []
    assert a == b


@pytest.mark.parametrize("seed", [1, 301])
def test_seeded_fuzz_runs_are_the_same_event_for_event(tmp_path: Path, seed: int) -> None:
    outs = {}
    for pure in (False, True):
        out = tmp_path / ("pure" if pure else "tree")
        _run([sys.executable, "-m", "logwright.cli", "fuzz", "--seeds", "3", "--seed",
              str(seed), "--steps", "40", "--out", str(out)], pure)
        traces = {p.name: p.read_bytes() for p in sorted(out.glob("seed-*.jsonl"))}
        summary = json.loads((out / "summary.json").read_text())
        outs[pure] = (traces, _without_timings(summary))
    assert len(outs[False][0]) == 3 and all(outs[False][0].values())
    assert outs[False] == outs[True]


def _without_timings(summary: dict[str, object]) -> dict[str, object]:
    """summary.json less what the clock decides (its two durations)."""
    assert isinstance(summary["seconds"], float)
    return {k: v for k, v in summary.items() if k not in ("seconds", "startup_seconds")}


def test_the_demo_narrates_the_same_run() -> None:
    compiled, pure = _both([sys.executable, "-m", "logwright.cli", "demo", "--seed", "3"])
    assert len(compiled.splitlines()) > 10
    assert compiled == pure
