"""``make mutmut``: mutmut 3 over the decision modules, and a score per module.

Three subcommands:

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

``python mutation/mutmut_run.py verify [--mutants DIR] [--survived] NAME [PYTEST ARGS...]``
    Checks a claimed kill for real. Reads the mutant ``NAME`` (a glob such as ``'...__mutmut_*'``
    takes every match, ``--survived`` only those mutmut recorded as survived) from mutmut's
    mutated copy (``DIR``, default ``mutants/``; only read), applies it to the function it
    mutates in a temporary copy of the current package (refusing if that function changed since
    mutmut generated the mutant), and runs ``pytest PYTEST ARGS`` in a fresh interpreter that
    imports the copy (``HYPOTHESIS_PROFILE=ci`` unless set). Prints the diff and one verdict per
    mutant: ``killed`` (pytest failed), ``timeout`` (it ran past ``--timeout``: a hang, caught
    as mutmut counts it), ``survived`` (it passed) or ``error`` (it collected nothing, could not
    run, or the mutant does not apply). Exit status 0 when every mutant is killed or timed out,
    1 when one survived, 2 on an error.

Run from the repository root (mutmut reads ``[tool.mutmut]`` in ``pyproject.toml``).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = "impl"          # where the package lives, relative to the root
MUTANTS = ROOT / "mutants"    # mutmut 3's mutated copy (fixed by mutmut)

# mutmut's exit-code verdicts, folded into the three the score needs.
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
SURVIVED = {"survived", "suspicious"}
CLASS_SEPARATOR = "\u01c1"   # mutmut's "ǁ" between a method's class and name in mutant names


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


class MutantError(Exception):
    """A mutant cannot be read from mutmut's copy or applied to the current source."""


@dataclass(frozen=True)
class MutantPatch:
    """One mutmut mutant as a patch: ``original`` (a function's text as mutmut saw it) is
    replaced by ``mutated`` in ``file`` (relative to the root)."""

    name: str
    file: str
    function: str  # the function's own name
    cls: str | None  # its class, None for a module-level function
    original: str
    mutated: str

    def diff(self) -> str:
        """The patch as a unified diff."""
        return "\n".join(difflib.unified_diff(
            self.original.splitlines(), self.mutated.splitlines(), fromfile=self.file,
            tofile=self.file, lineterm=""))

    def apply(self, root: Path) -> None:
        """Apply the patch to the tree at ``root`` (a copy, never the repository); MutantError
        if the function there is not the one mutmut mutated (the source moved on)."""
        assert root.resolve() != ROOT, "mutants are applied to a copy, never to the repository"
        path = root / self.file
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        node = _find_function(ast.parse(text), self.function, self.cls)
        if node is None:
            raise MutantError(f"{self.name}: {self.file} has no function {self.function!r}")
        first, last = _span(node)
        if "".join(lines[first:last]).rstrip() != self.original.rstrip():
            raise MutantError(f"{self.name}: {self.function!r} in {self.file} changed since "
                              "mutmut generated the mutant; run mutmut again")
        lines[first:last] = [self.mutated.rstrip() + "\n"]
        path.write_text("".join(lines), encoding="utf-8")


def _span(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    """The 0-based line range of a function, decorators included."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    assert node.end_lineno is not None
    return first, node.end_lineno


def _find_function(module: ast.Module, name: str,
                   cls: str | None) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The module-level function ``name`` (``cls`` None) or the method ``name`` of the
    module-level class ``cls``."""
    body: list[ast.stmt] = module.body
    if cls is not None:
        owners = [n for n in module.body if isinstance(n, ast.ClassDef) and n.name == cls]
        if not owners:
            return None
        body = owners[0].body
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def _split_name(name: str) -> tuple[str, str, str, str | None]:
    """``logwright.a.b.xǁCǁf__mutmut_3`` -> (module, mangled key, function, class)."""
    module, _, local = name.rpartition(".")
    key, sep, _ = local.partition("__mutmut_")
    if not module or not sep:
        raise MutantError(f"{name!r} is not a mutmut mutant name")
    if key.startswith("x" + CLASS_SEPARATOR) and key.count(CLASS_SEPARATOR) == 2:
        _, cls, function = key.split(CLASS_SEPARATOR)
        return module, key, function, cls
    if key.startswith("x_"):
        return module, key, key[2:], None
    raise MutantError(f"{name!r} is not a mutmut mutant name")


def read_patch(name: str, mutants_dir: Path = MUTANTS) -> MutantPatch:
    """The mutant ``name`` as a patch, read from mutmut's mutated copy at ``mutants_dir``."""
    module, key, function, cls = _split_name(name)
    base = PACKAGE_DIR + "/" + module.replace(".", "/")
    for rel in (base + ".py", base + "/__init__.py"):
        if (mutants_dir / rel).is_file():
            break
    else:
        raise MutantError(f"{name}: no file for module {module} under {mutants_dir}")
    text = (mutants_dir / rel).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    tree = ast.parse(text)

    def function_text(generated: str) -> str:
        node = _find_function(tree, generated, cls)
        if node is None:
            raise MutantError(f"{name}: {generated!r} not found in {mutants_dir / rel}")
        first, last = _span(node)
        head = lines[node.lineno - 1]
        lines_of = lines[first:node.lineno - 1]
        lines_of.append(head.replace(f"def {generated}(", f"def {function}(", 1))
        return "".join(lines_of + lines[node.lineno:last])

    local = name.rpartition(".")[2]
    return MutantPatch(name=name, file=rel, function=function, cls=cls,
                       original=function_text(key + "__mutmut_orig"),
                       mutated=function_text(local))


def matching_mutants(pattern: str, mutants_dir: Path = MUTANTS,
                     survived_only: bool = False) -> list[str]:
    """The mutant names in mutmut's results matching the glob ``pattern`` (only those mutmut
    recorded as survived if ``survived_only``)."""
    names: list[str] = []
    for groups in collect(mutants_dir).values():
        for status, members in groups.items():
            if survived_only and status not in SURVIVED:
                continue
            names += [n for n in members if fnmatch.fnmatchcase(n, pattern)]
    return sorted(names)


PYTEST_DRIVER = """
import sys
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def verify(patch: MutantPatch, pytest_args: list[str], timeout: float = 600) -> str:
    """``killed``, ``survived``, ``timeout`` or ``error``: the tests ``pytest_args`` (run from
    the root) on a temporary copy of the package with ``patch`` applied, in a fresh
    interpreter. ``timeout``: they ran longer than ``timeout`` seconds (a hang, which fails CI
    too: mutmut counts it caught, and so does the score)."""
    if str(ROOT) not in sys.path:  # run as a script: mutation/ is on the path, not the root
        sys.path.insert(0, str(ROOT))
    from mutation.catalogue import run_in_copy

    os.environ.setdefault("HYPOTHESIS_PROFILE", "ci")
    args = ("-p", "no:cacheprovider", "-x", "-q", *pytest_args)
    with tempfile.TemporaryDirectory(prefix="mutmut-verify-") as tmp:
        try:
            out = run_in_copy(PYTEST_DRIVER, Path(tmp), None, args, timeout=timeout,
                              plant=patch.apply, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return "timeout"
    if out.returncode == 0:
        return "survived"
    if out.returncode == 1:
        return "killed"
    print(out.stdout[-3000:] + out.stderr[-3000:])
    return "error"


def main_verify(args: argparse.Namespace) -> int:
    """The ``verify`` subcommand (see the module docstring)."""
    if not args.pytest_args:
        print("verify: give the tests to run (pytest arguments) after the mutant's name")
        return 2
    names = [args.name]
    if any(c in args.name for c in "*?["):
        names = matching_mutants(args.name, args.mutants, args.survived)
        if not names:
            print(f"verify: no mutant matches {args.name!r} in {args.mutants}")
            return 2
    verdicts: dict[str, str] = {}
    for name in names:
        try:
            patch = read_patch(name, args.mutants)
            if not args.quiet:
                print(patch.diff())
            verdicts[name] = verify(patch, args.pytest_args, args.timeout)
        except MutantError as exc:
            print(f"verify: {exc}")
            verdicts[name] = "error"
        print(f"{verdicts[name]}: {name}", flush=True)
    if len(names) > 1:
        counts = {v: list(verdicts.values()).count(v)
                  for v in ("killed", "timeout", "survived", "error")}
        print(", ".join(f"{n} {v}" for v, n in counts.items()))
    if "error" in verdicts.values():
        return 2
    return 1 if "survived" in verdicts.values() else 0


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
    v = sub.add_parser("verify", help="apply one mutant to a copy and run the given tests")
    v.add_argument("--mutants", type=Path, default=MUTANTS,
                   help="mutmut's mutated copy to read the mutant from (default mutants/)")
    v.add_argument("--survived", action="store_true",
                   help="with a glob: only the mutants mutmut recorded as survived")
    v.add_argument("--timeout", type=float, default=600, help="seconds per mutant")
    v.add_argument("--quiet", action="store_true", help="do not print the diffs")
    v.add_argument("name", help="the mutant's name (quoted), or a glob over names")
    v.add_argument("pytest_args", nargs=argparse.REMAINDER, help="the tests to run")
    args = parser.parse_args(argv)
    if args.command == "verify":
        return main_verify(args)
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
