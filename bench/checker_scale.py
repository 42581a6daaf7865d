"""The model checker at ten million states (issue 16): ``logwright check`` beside TLC on both cores.

Invariant upheld: the figure is never shown alone, and never for a wrong exploration. One run
checks bench/FetcherFailure_10M.cfg (10,044,936 distinct states) three times: with the packed
engine on one thread and on two (``check(spec, workers=N)``, each in a child process of its own,
so its peak resident memory is its own), and with TLC ``-workers 2``. Each of the three must find
the same distinct-state count, generated count and depth, else the row is an ERROR. The figure
is the two-thread rate in distinct states per second of wall time, the reference TLC's rate
(JVM start included: a second of its several minutes); the target is ten times TLC's rate. A
second row gives the two-thread run's peak RSS against the 8 GiB the issue allows.

It takes TLC's minutes, so ``bench/run.py --quick`` leaves it out; without TLC installed
(``TLA2TOOLS_JAR``) the TLC row is an ERROR naming what is missing.

    python bench/checker_scale.py       # or: python bench/run.py --only checker_scale
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from common import Result, Target, error_result  # noqa: E402

CFG = BENCH_DIR / "FetcherFailure_10M.cfg"
MODULE = "FetcherFailure"
TARGET = Target("ratio", ">=", 10.0)
MEMORY_LIMIT_MB = 8 * 1024 * 1.048576  # 8 GiB in MB
SKIP_IN_QUICK_RUNS = True
TLC_TIMEOUT_S = 3600


def _child(workers: int) -> dict[str, float]:
    """The child's work: one exploration; its figures and its own peak RSS."""
    import resource

    from logwright.model import SPECS, check

    spec = SPECS[MODULE].from_cfg(CFG)  # type: ignore[attr-defined]
    result = check(spec, workers=workers)
    if not result.holds:
        raise SystemExit(f"the correct model did not hold: {result.summary()}")
    return {"distinct": result.distinct, "generated": result.generated, "depth": result.depth,
            "seconds": result.seconds, "engine": 1.0 if result.engine == "packed" else 0.0,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 * 1.048576}


def _ours(workers: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                          str(workers)], capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(out.stdout)
    return figures


def run() -> list[Result]:
    """The two rows of the module docstring."""
    from logwright.verify.formal import spec_dir
    from logwright.verify.tlc import run_tlc, tlc_missing

    name = "model checker, 10M states, 2 workers, beside TLC -workers 2"
    memory = "model checker, 10M states, 2 workers: peak RSS"
    load = os.getloadavg()[0]
    one, two = _ours(1), _ours(2)
    counts = {(int(r["distinct"]), int(r["generated"]), int(r["depth"])) for r in (one, two)}
    if len(counts) != 1:
        return [error_result(name, "states/s", "TLC -workers 2", TARGET,
                             f"one and two workers disagree: {sorted(counts)}")]
    distinct, generated, depth = counts.pop()
    rate = distinct / two["seconds"]
    rows = [Result(memory, two["rss_mb"], "MB", MEMORY_LIMIT_MB, "MB", "8 GiB",
                   Target("ratio", "<", 1.0), [two["rss_mb"]], [MEMORY_LIMIT_MB],
                   note=f"one worker: {one['rss_mb']:,.0f} MB")]
    missing = tlc_missing()
    if missing is not None:
        return [error_result(name, "states/s", "TLC -workers 2", TARGET, missing), *rows]
    tlc = run_tlc(spec_dir() / f"{MODULE}.tla", CFG, workers=2, check_deadlock=False,
                  timeout_s=TLC_TIMEOUT_S)
    if not tlc.ok or tlc.violation is not None:
        return [error_result(name, "states/s", "TLC -workers 2", TARGET,
                             f"TLC: {tlc.error or tlc.violation}"), *rows]
    if (tlc.distinct, tlc.generated, tlc.depth) != (distinct, generated, depth):
        return [error_result(name, "states/s", "TLC -workers 2", TARGET,
                             f"TLC finds {tlc.distinct:,} distinct, {tlc.generated:,} "
                             f"generated, depth {tlc.depth}; logwright check {distinct:,}, "
                             f"{generated:,}, depth {depth}"), *rows]
    note = (f"{distinct:,} distinct states, {generated:,} generated, depth {depth}, the same "
            f"for all three; two workers {two['seconds']:.1f} s, one worker "
            f"{one['seconds']:.1f} s (speed-up {one['seconds'] / two['seconds']:.2f}x), TLC "
            f"-workers 2 {tlc.seconds:.1f} s; load average at start {load:.2f}")
    return [Result(name, rate, "states/s", tlc.states_per_second, "states/s",
                   "TLC -workers 2", TARGET, [rate], [tlc.states_per_second],
                   note=note), *rows]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(_child(int(sys.argv[2]))))
    else:
        for result in run():
            print(result.benchmark, f"{result.figure:,.0f} beside {result.reference:,.0f}",
                  f"ratio {result.ratio:.2f}", result.error or result.verdict.value)
            print(result.note)
