"""``make bench``: run every benchmark module in bench/ and print one table.

Invariant upheld: every figure is shown beside the physical reference measured in the same run,
the ratio of the two, its target and whether it meets it; nothing here is a timed assertion.
A module is picked up if it is a ``bench/*.py`` other than this file and ``common.py`` and
defines ``run(quick: bool = False) -> list[Result]`` (see common.py); adding a file is enough.

Usage: ``python bench/run.py [--quick] [--json] [--only MODULE ...]``. Exit status 1 if a figure
could not be measured at all (verdict ERROR); a figure below its target is reported, not fatal.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import inspect
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from common import Result, Target, Verdict, error_result, format_value  # noqa: E402

NOT_BENCHMARKS = frozenset({"run", "common"})


def discover() -> list[str]:
    """Names of the benchmark modules in bench/, in file-name order."""
    return sorted(p.stem for p in BENCH_DIR.glob("*.py")
                  if p.stem not in NOT_BENCHMARKS and not p.stem.startswith(("_", "test")))


def run_module(name: str, quick: bool) -> list[Result]:
    """Import bench/<name>.py and run it; an import or run failure becomes one ERROR row."""
    try:
        module = importlib.import_module(name)
        run: Callable[..., list[Result]] | None = getattr(module, "run", None)
        if run is None:
            return []  # a helper module, not a benchmark
        if quick and getattr(module, "SKIP_IN_QUICK_RUNS", False):
            return []  # its own --quick runs it; a quick run of every module leaves it out
        takes_quick = "quick" in inspect.signature(run).parameters
        return run(quick=quick) if takes_quick else run()
    except Exception as exc:  # one broken module must not hide the others' figures
        return [error_result(name, "", "", Target("figure", ">=", 0),
                             f"{type(exc).__name__}: {exc}")]


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    from logwright import _native

    return {"cores": os.cpu_count(), "cpu": cpu, "platform": platform.platform(),
            "python": platform.python_version(), "build": _native.status().describe(),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def render_table(results: list[Result], console: Console, title: str) -> None:
    """One row per figure: benchmark, figure, reference, ratio, target, headroom, verdict, and
    the figure by CPU time (what it would be with a core to itself: on shared cores the wall
    figure falls below it while neighbours run)."""
    table = Table(title=title)
    for col, justify in (("benchmark", "left"), ("figure", "right"), ("reference", "right"),
                         ("ratio", "right"), ("target", "left"), ("vs target", "right"),
                         ("verdict", "left"), ("figure by CPU time", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in results:
        style = {Verdict.MEETS: "green", Verdict.BELOW: "yellow", Verdict.ERROR: "red",
                 Verdict.REPORTED: "cyan"}[r.verdict]
        ratio = "-" if r.error else f"{r.ratio:.2f}"
        headroom = "-" if r.error or not math.isfinite(r.headroom) else f"{r.headroom:.2f}x"
        cpu = "-" if r.error or r.cpu_figure is None else format_value(r.cpu_figure, r.unit)
        table.add_row(r.benchmark, format_value(r.figure, r.unit),
                      format_value(r.reference, r.reference_unit), ratio, r.target_text(),
                      headroom, f"[{style}]{r.verdict.value}[/{style}]", cpu)
    console.print(table)
    for r in results:
        parts = [f"reference: {r.reference_name}"] if r.reference_name else []
        parts += [r.error] if r.error else [r.note] if r.note else []
        console.print(f"- {r.benchmark}: {'; '.join(parts)}", highlight=False, soft_wrap=True)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, one repetition: a smoke test, not a measurement")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--only", nargs="+", metavar="MODULE",
                        help=f"run only these modules (of: {', '.join(discover())})")
    args = parser.parse_args(argv)
    names = discover()
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"no benchmark module {', '.join(unknown)} in {BENCH_DIR}")
        names = [n for n in names if n in args.only]
    progress = Console(stderr=True)
    started = time.perf_counter()
    results: list[Result] = []
    for name in names:
        progress.print(f"running bench/{name}.py{' (quick)' if args.quick else ''}...",
                       highlight=False)
        results.extend(run_module(name, args.quick))
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    info = machine()
    if args.json:
        print(json.dumps({
            "command": "python bench/run.py" + (" --quick" if args.quick else ""),
            "date": when, "machine": info, "quick": args.quick,
            "seconds": round(time.perf_counter() - started, 1),
            "results": [r.to_json() for r in results],
        }, indent=2))
    else:
        mode = " --quick (a smoke test, not a measurement)" if args.quick else ""
        load = info["load_average"][0]
        title = (f"logwright bench{mode}: {when}, {info['cores']} cores ({info['cpu']}), "
                 f"load average {load}; {info['build']}; medians of repetitions")
        console = Console()
        if not console.is_terminal:
            console = Console(width=180)  # a log file or pipe: keep each row on one line
        render_table(results, console, title)
    return 1 if any(r.verdict is Verdict.ERROR for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
