"""Compare the figures of two checkouts, paired A B A B, on one machine in one session.

A change that must not cost anything (a reshaping of the code) is judged by running the same
benchmarks from the tree before it and the tree after it, alternately, so both see the same
load. Each round runs the chosen benchmarks of ``bench/storage.py`` (or, with ``--module
cluster``, of ``bench/cluster.py``) in a fresh interpreter with the package and bench/ of one
tree; the table gives, per figure and tree, the median over the rounds of the ratio to the
reference measured in the same run and of the CPU figure, and the range of the ratio. Nothing
is asserted: on a shared machine the reader judges what is noise.

Usage::

    python bench/compare.py BEFORE_TREE AFTER_TREE [--rounds 5] [--quick]
                            [--module storage|cluster] [--only bench_startup bench_recovery]

``BEFORE_TREE`` is a checkout of the older commit (``git worktree add ../before <rev>``). Not a
benchmark module: ``bench/run.py`` skips it (it defines no ``run``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ONE_ROUND = """
import importlib, json, sys
tree, module = sys.argv[1], sys.argv[2]
sys.path[:0] = [tree + "/impl", tree + "/bench"]
import logwright
assert logwright.__file__.startswith(tree), logwright.__file__
bench = importlib.import_module(module)
quick = sys.argv[3] == "quick"
# bench/storage.py's benchmarks take their sizes, bench/cluster.py's whether to run quick.
size = (bench.QUICK if quick else bench.FULL) if module == "storage" else quick
out = {}
for name in sys.argv[4:]:
    r = getattr(bench, name)(size)
    out[r.benchmark] = {"ratio": r.figure / r.reference if r.reference else None,
                        "cpu": r.cpu_figure, "error": r.error}
print(json.dumps(out))
"""


def one_round(tree: Path, module: str, quick: bool, names: list[str]
              ) -> dict[str, dict[str, float | None]]:
    """The chosen benchmarks of ``tree``, in a fresh interpreter: figure name -> ratio, cpu."""
    proc = subprocess.run([sys.executable, "-c", ONE_ROUND, str(tree.resolve()), module,
                           "quick" if quick else "full", *names],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"error: the benchmarks of {tree} failed:\n{proc.stderr.strip()}")
    result: dict[str, dict[str, float | None]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print the table; exit 2 on bad arguments, 1 if a tree fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--module", choices=("storage", "cluster"), default="storage",
                        help="the bench module whose functions run (default storage)")
    parser.add_argument("--only", nargs="+", default=None, metavar="BENCH",
                        help="functions of the module to run (default for storage: "
                        "bench_startup bench_recovery; for cluster: bench_simulator_events)")
    args = parser.parse_args(argv)
    for tree in (args.before, args.after):
        if not (tree / "impl" / "logwright").is_dir() or not (tree / "bench").is_dir():
            parser.error(f"{tree} is not a logwright checkout (no impl/logwright or bench/)")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    names = args.only or (["bench_startup", "bench_recovery"] if args.module == "storage"
                          else ["bench_simulator_events"])
    samples: dict[tuple[str, str], list[dict[str, float | None]]] = {}
    for i in range(args.rounds):
        for label, tree in (("before", args.before), ("after", args.after)):
            for name, row in one_round(tree, args.module, args.quick, names).items():
                if row.get("error"):
                    print(f"error: {label} tree, {name}: {row['error']}", file=sys.stderr)
                    return 1
                samples.setdefault((name, label), []).append(row)
            print(f"round {i + 1}/{args.rounds}: {label} done", file=sys.stderr, flush=True)
    print(f"{'figure':34} {'tree':7} {'ratio (median)':>15} {'range':>15} {'cpu (median)':>13}")
    for (name, label), rows in samples.items():
        ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
        cpus = [r["cpu"] for r in rows if r["cpu"] is not None]
        ratio = f"{statistics.median(ratios):.3f}" if ratios else "-"
        span = f"{min(ratios):.3f}-{max(ratios):.3f}" if ratios else "-"
        cpu = f"{statistics.median(cpus):,.3f}" if cpus else "-"
        print(f"{name[:34]:34} {label:7} {ratio:>15} {span:>15} {cpu:>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
