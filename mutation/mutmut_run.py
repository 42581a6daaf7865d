"""``make mutmut``: mutmut 3 over the decision modules, and a score per module.

Two subcommands:

``python mutation/mutmut_run.py mutmut ARGS...``
    mutmut's own command line (``run``, ``results``, ``show NAME``, ``browse``...), with the two
    adjustments this repository's layout needs. mutmut names a mutant after its file's path
    (``impl/logwright/broker/fencing.py`` -> ``impl.logwright.broker.fencing``) and puts only
    ``mutants/``, ``mutants/src`` and ``mutants/source`` on ``sys.path``; the package here lives
    in ``impl/`` and the tests import ``logwright``. So the ``impl.`` prefix is dropped from the
    names (as mutmut drops ``src.``) and ``mutants/impl`` goes first on ``sys.path``, so that the
    mutated copy is the ``logwright`` the tests import, not the editable install.

``python mutation/mutmut_run.py score [--json out/mutmut.json] [--min 90]``
    Reads mutmut's results (``mutants/**/*.py.meta``) and prints, per file and in total,
    killed / (killed + survived), a timeout counted as killed (a test run that hangs fails CI
    too). Mutants not run, and mutants no selected test reaches, are listed apart and not in
    the score. Writes the figures and every survivor's name to the JSON file. Exit status 0 when
    the total is at least ``--min`` percent, 1 below it, 2 when nothing has run.

Run from the repository root (mutmut reads ``[tool.mutmut]`` in ``pyproject.toml``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = "impl"          # where the package lives, relative to the root
MUTANTS = ROOT / "mutants"    # mutmut 3's mutated copy (fixed by mutmut)

# mutmut's exit-code verdicts, folded into the three the score needs.
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
SURVIVED = {"survived", "suspicious"}


def _patch_mutmut() -> None:
    """Teach mutmut 3 that the package lives in ``impl/`` (see the module docstring)."""
    import mutmut.__main__ as main
    import mutmut.mutation.file_mutation as file_mutation
    import mutmut.utils.file_utils as file_utils
    import mutmut.utils.format_utils as format_utils

    original_name = format_utils.get_mutant_name
    prefix = PACKAGE_DIR + "."

    def get_mutant_name(relative_source_path: Path, mutant_method_name: str) -> str:
        name = original_name(relative_source_path, mutant_method_name)
        return name[len(prefix):] if name.startswith(prefix) else name

    original_paths = file_utils.setup_source_paths

    def setup_source_paths() -> None:
        original_paths()
        mutated = (Path("mutants") / PACKAGE_DIR).absolute()
        if str(mutated) not in sys.path:
            sys.path.insert(0, str(mutated))
        loaded = sys.modules.get("logwright")
        if loaded is not None and not str(loaded.__file__).startswith(str(mutated)):
            raise SystemExit(f"logwright already imported from {loaded.__file__}")

    # mutmut passes a mutant's tests in set order; run the fastest first, so that a killed
    # mutant (most of them) costs the time to its first failing test, not a slow one's.
    from mutmut.runners.harness import PytestRunner
    from mutmut.state import state

    original_args = PytestRunner._pytest_args_regular_run

    def fastest_first(self: PytestRunner, tests: Iterable[str]) -> list[str]:
        durations = state().duration_by_test
        ordered = sorted(tests, key=lambda t: (durations.get(t, 0.0), t))
        return original_args(self, ordered)

    PytestRunner._pytest_args_regular_run = fastest_first  # type: ignore[method-assign]

    for module in (format_utils, main, file_mutation):
        module.get_mutant_name = get_mutant_name  # type: ignore[attr-defined]
    for module in (file_utils, main):
        module.setup_source_paths = setup_source_paths  # type: ignore[attr-defined]


def run_mutmut(args: list[str]) -> None:
    """mutmut's command line with the layout patch (never returns)."""
    _patch_mutmut()
    import mutmut.__main__ as main

    sys.argv = ["mutmut", *args]
    main.cli()


def _status_by_code(code: int | None) -> str:
    from mutmut.stats import status_by_exit_code

    return str(status_by_exit_code[code])


def collect(mutants_dir: Path = MUTANTS) -> dict[str, dict[str, list[str]]]:
    """Per source file (relative to the root): mutant names grouped by mutmut's verdict."""
    by_file: dict[str, dict[str, list[str]]] = {}
    for meta in sorted(mutants_dir.rglob("*.py.meta")):
        rel = meta.relative_to(mutants_dir).as_posix()[: -len(".meta")]
        data = json.loads(meta.read_text())
        groups: dict[str, list[str]] = defaultdict(list)
        for name, code in sorted(data["exit_code_by_key"].items()):
            groups[_status_by_code(code)].append(name)
        by_file[rel] = dict(groups)
    return by_file


def score(by_file: dict[str, dict[str, list[str]]]) -> dict[str, object]:
    """The per-file and total figures (see the module docstring)."""
    rows = []
    totals: dict[str, int] = defaultdict(int)
    survivors: list[str] = []
    for path, groups in by_file.items():
        counts = {
            "killed": sum(len(v) for k, v in groups.items() if k in KILLED),
            "timeouts": len(groups.get("timeout", [])),
            "survived": sum(len(v) for k, v in groups.items() if k in SURVIVED),
            "no_tests": len(groups.get("no tests", [])),
            "not_run": sum(len(v) for k, v in groups.items()
                           if k not in KILLED | SURVIVED | {"no tests"}),
        }
        ran = counts["killed"] + counts["survived"]
        for key, value in counts.items():
            totals[key] += value
        survivors += [n for k, v in groups.items() if k in SURVIVED for n in v]
        rows.append({"file": path, **counts,
                     "score": round(100 * counts["killed"] / ran, 1) if ran else None})
    ran = totals["killed"] + totals["survived"]
    return {"files": rows, "total": {**totals,
            "score": round(100 * totals["killed"] / ran, 1) if ran else None},
            "survivors": sorted(survivors)}


def print_table(result: dict[str, object]) -> None:
    """The score as a table at 80 columns."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE, title="mutmut: killed / (killed + survived), timeouts killed")
    for column in ("file", "killed", "t/o", "surv.", "score", "no test", "not run"):
        table.add_column(column, justify="left" if column == "file" else "right", no_wrap=True)
    files = result["files"]
    assert isinstance(files, list)
    ran = [r for r in files if r["killed"] + r["survived"] + r["no_tests"]]
    idle = [r for r in files if r not in ran and r["not_run"]]
    for row in [*ran, {"file": "total", **result["total"]}]:  # type: ignore[dict-item]
        table.add_row(row["file"].removeprefix("impl/logwright/"), str(row["killed"]),
                      str(row["timeouts"]), str(row["survived"]),
                      "-" if row["score"] is None else f"{row['score']:.1f}",
                      str(row["no_tests"]), str(row["not_run"]))
    console = Console(width=80)
    console.print(table)
    if idle:
        console.print(f"not run at all ({sum(r['not_run'] for r in idle)} mutants): "
                      + ", ".join(r["file"].removeprefix("impl/logwright/") for r in idle))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["mutmut"]:
        run_mutmut(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("score", help="score per module from mutants/ (after a run)")
    s.add_argument("--json", type=Path, default=ROOT / "out" / "mutmut.json")
    s.add_argument("--min", type=float, default=90.0, help="fail below this percentage")
    sub.add_parser("mutmut", help="mutmut's command line, patched for impl/")
    args = parser.parse_args(argv)
    result = score(collect())
    print_table(result)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    total = result["total"]
    assert isinstance(total, dict)
    if total["score"] is None:
        print("no mutant has run: mutants/ holds no result")
        return 2
    print(f"total {total['score']:.1f}% (minimum {args.min:.0f}%); written to {args.json}")
    return 0 if total["score"] >= args.min else 1


if __name__ == "__main__":
    sys.exit(main())
