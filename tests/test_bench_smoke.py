"""``make bench`` still produces every figure: its quick mode runs end to end in a few seconds.

Only that the figures exist is checked, never how fast anything is (timings are reported by
``make bench``, not asserted: the machine is shared). The verdict arithmetic (meets or below a
target, ratio to the reference) is checked on fixed numbers.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

from common import Result, Target, Verdict  # noqa: E402

STORAGE_FIGURES = {
    "append 1 MiB batches",
    "append 1 KiB batches",
    "sequential read, 1 MiB reads",
    "recovery, 16 KiB batches",
}
STARTUP_PREFIX = "start-up, "
JBOD_PREFIXES = ("JBOD move copy throughput", "JBOD move throttle accuracy",
                 "JBOD move: appends held in the swap")


def test_quick_mode_produces_every_figure() -> None:
    """One run of ``bench/run.py --quick --json`` (one test, so test workers run it once)."""
    proc = subprocess.run([sys.executable, str(BENCH_DIR / "run.py"), "--quick", "--json"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"bench/run.py --quick failed:\n{proc.stdout}\n{proc.stderr}"
    report = json.loads(proc.stdout)
    assert report["quick"] is True and report["machine"]["cores"] >= 1
    assert str(report["date"]).startswith("20")
    rows = report["results"]
    names = {row["benchmark"] for row in rows}
    assert names >= STORAGE_FIGURES, f"missing: {STORAGE_FIGURES - names}"
    assert any(name.startswith(STARTUP_PREFIX) for name in names), names
    for prefix in JBOD_PREFIXES:
        assert any(name.startswith(prefix) for name in names), (prefix, names)
    for row in rows:  # every module's rows, not only storage's
        assert row["error"] is None, f"{row['benchmark']}: {row['error']}"
        for key in ("figure", "reference", "ratio"):
            assert math.isfinite(row[key]) and row[key] > 0, f"{row['benchmark']}: {key} {row}"
        assert row["verdict"] in (Verdict.MEETS.value, Verdict.BELOW.value,
                                  Verdict.REPORTED.value)
        assert row["reference_name"] and row["target"]["text"]


def _result(figure: float, reference: float, target: Target) -> Result:
    return Result("b", figure, "MB/s", reference, "MB/s", "dd", target)


def test_ratio_target_is_judged_on_the_ratio() -> None:
    half = Target("ratio", ">=", 0.5)
    assert _result(600.0, 1000.0, half).verdict is Verdict.MEETS
    assert _result(400.0, 1000.0, half).verdict is Verdict.BELOW
    assert _result(400.0, 1000.0, half).headroom == pytest.approx(0.8)


def test_absolute_targets_in_both_directions() -> None:
    under_3s = Target("figure", "<", 3.0)
    assert _result(2.0, 0.5, under_3s).verdict is Verdict.MEETS
    assert _result(3.0, 0.5, under_3s).verdict is Verdict.BELOW
    assert _result(2.0, 0.5, under_3s).headroom == pytest.approx(1.5)
    at_least = Target("figure", ">=", 100_000)
    assert _result(100_000, 1.0, at_least).verdict is Verdict.MEETS
    assert _result(99_999, 1.0, at_least).verdict is Verdict.BELOW


def test_a_failed_benchmark_is_an_error_not_a_verdict() -> None:
    row = _result(1.0, 1.0, Target("figure", ">=", 0.5))
    row.error = "EMFILE"
    assert row.verdict is Verdict.ERROR
    assert math.isnan(row.headroom)


def test_bench_imports_no_tests() -> None:
    """bench/ shares its harness with the tests through the package, never by importing tests/
    or model_tests/ (they are not installed, and a test module runs its settings on import)."""
    import ast

    found = []
    for path in sorted(BENCH_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: {n}" for n in names
                      if n.split(".")[0] in ("tests", "model_tests", "conftest")]
        assert "model_tests" not in path.read_text(encoding="utf-8"), path.name
    assert found == []


def test_compare_runs_two_trees_and_refuses_a_non_checkout(tmp_path: Path) -> None:
    """``bench/compare.py`` pairs two checkouts (here the same one twice) and prints each
    figure per tree; a path that is no checkout is a usage error (exit 2)."""
    root = BENCH_DIR.parent
    script = str(BENCH_DIR / "compare.py")
    proc = subprocess.run([sys.executable, script, str(root), str(root), "--rounds", "1",
                           "--quick"], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()[1:]]
    assert {(r[0], r[-4]) for r in rows} >= {("start-up,", "before"), ("start-up,", "after"),
                                               ("recovery,", "before"), ("recovery,", "after")}
    bad = subprocess.run([sys.executable, script, str(tmp_path), str(root)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2 and "not a logwright checkout" in bad.stderr


def test_compare_runs_the_cluster_module() -> None:
    """``--module cluster`` pairs bench/cluster.py's simulator figure of two trees."""
    root = BENCH_DIR.parent
    proc = subprocess.run([sys.executable, str(BENCH_DIR / "compare.py"), str(root), str(root),
                           "--rounds", "1", "--quick", "--module", "cluster"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()[1:]]
    assert {(r[0], r[-4]) for r in rows} == {("simulator", "before"), ("simulator", "after")}
