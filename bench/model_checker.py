"""The model checker's throughput (issue 3): distinct states per second, beside TLC's.

Invariant upheld: the Python figure is never shown alone. For every correct .cfg in spec/ whose
module has a Python twin (``logwright.model.SPECS``), the Python checker and TLC (``-workers 1``,
when ``TLA2TOOLS_JAR`` names a jar) explore the same model in the same run, and the row shows both
rates and their ratio, against the target "at least TLC's single-worker rate". Each timed run is
checked to have found exactly TLC's distinct-state count (from spec/tlc_figures.json), so a fast
wrong exploration cannot pass for a fast right one. TLC's time is wall time including the JVM's
start (about a second), which matters only for models TLC finishes in a few seconds. Without
TLC, the reference is the issue's quoted TLC rate (70,000 states/s), labelled as not measured.

Run alone: ``python bench/model_checker.py [--quick]`` prints the table; ``make bench`` runs it
with the other benchmarks.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from common import Result, Target, error_result  # noqa: E402
from logwright.model import SPECS, check  # noqa: E402
from logwright.verify.formal import configs, spec_dir, tlc_figures  # noqa: E402
from logwright.verify.tlc import run_tlc, tlc_missing  # noqa: E402

TARGET = Target("ratio", ">=", 1.0)
"""At least TLC's single-worker distinct states per second."""

TLC_ISSUE_RATE = 70_000.0
"""Issue 3's figure for TLC, distinct states/s per worker on a comparable log model: the
reference when TLC is not installed here (the row says it was not measured)."""


QUICK_MAX_STATES = 20_000
"""``--quick`` (a smoke test, not a measurement) explores at most this many states of each .cfg:
the largest take most of a minute in full, and the tests check their counts elsewhere."""


def _python_rate(module: str, cfg: Path, expected: int | None, max_states: int | None = None
                 ) -> tuple[float, float, str]:
    """(distinct/s by wall time, by CPU time, engine) of one exploration (of its first
    ``max_states`` states when given: then a cut exploration is not compared with TLC's
    count)."""
    spec = SPECS[module].from_cfg(cfg)  # type: ignore[attr-defined]
    cpu = time.process_time()
    result = check(spec, max_states)
    cpu_s = time.process_time() - cpu
    cut = max_states is not None and not result.complete and result.violation is None
    if cut:
        expected = None
    elif result.violation is not None or not result.complete:
        raise RuntimeError(f"{cfg.name}: the correct model did not hold: {result.summary()}")
    if expected is not None and result.distinct != expected:
        raise RuntimeError(f"{cfg.name}: {result.distinct} distinct states, TLC finds {expected}")
    return result.states_per_second, result.distinct / cpu_s if cpu_s > 0 else 0.0, result.engine


def run(quick: bool = False) -> list[Result]:
    """One row per correct .cfg with a Python twin."""
    repetitions = 1 if quick else 3
    figures = tlc_figures()
    missing = tlc_missing()
    results: list[Result] = []
    for module in SPECS:
        cfg, _ = configs(module)
        name = f"model checker {cfg.name}"
        if not cfg.is_file():
            continue
        expected = figures.get(cfg.name, {}).get("distinct")
        try:
            runs = [_python_rate(module, cfg, expected, QUICK_MAX_STATES if quick else None)
                    for _ in range(repetitions)]
        except Exception as exc:  # one broken module must not hide the others' figures
            results.append(error_result(name, "states/s", "TLC -workers 1", TARGET,
                                        f"{type(exc).__name__}: {exc}"))
            continue
        rates = sorted(r[0] for r in runs)
        cpu_rates = sorted(r[1] for r in runs)
        engine = runs[0][2]
        if missing is not None:  # no TLC to measure: judged against the issue's TLC figure
            results.append(Result(name, rates[len(rates) // 2], "states/s", TLC_ISSUE_RATE,
                                  "states/s", "TLC rate quoted by issue 3 (not measured)",
                                  TARGET, rates, cpu_figure=cpu_rates[len(cpu_rates) // 2],
                                  cpu_samples=cpu_rates, note=f"{engine} engine; {missing}"))
            continue
        tlc = run_tlc(spec_dir() / f"{module}.tla", cfg, workers=1)
        if not tlc.ok or tlc.violation is not None or not tlc.distinct:
            results.append(error_result(name, "states/s", "TLC -workers 1", TARGET,
                                        f"TLC: {tlc.error or tlc.violation}"))
            continue
        note = f"{engine} engine, {expected or tlc.distinct:,} distinct states"
        if expected is not None and tlc.distinct != expected:
            note += f" (TLC found {tlc.distinct:,}: spec/tlc_figures.json is stale)"
        results.append(Result(name, rates[len(rates) // 2], "states/s", tlc.states_per_second,
                              "states/s", "TLC -workers 1", TARGET, rates,
                              [tlc.states_per_second],
                              cpu_figure=cpu_rates[len(cpu_rates) // 2], cpu_samples=cpu_rates,
                              note=note))
    return results


def main() -> None:
    """Print the rows as a plain table."""
    print(f"{'cfg':<32} {'python states/s':>16} {'TLC states/s':>14} {'ratio':>8}  note")
    for r in run(quick="--quick" in sys.argv):
        cfg = r.benchmark.removeprefix("model checker ")
        print(f"{cfg:<32} {r.figure:>16,.0f} {r.reference:>14,.0f} {r.ratio:>7.1f}x  "
              f"{r.error or r.note}")


if __name__ == "__main__":
    main()
