"""``make mutants``: plant each named fault in a copy of the tree and run the CI campaign on it.

For every mutant of ``mutation/catalogue.py``: copy the repository (without .git, .venv, out/ and
caches) into a temporary dir, apply the text patch, and run ``make test``'s pytest command there
(``HYPOTHESIS_PROFILE=ci``, ``-n 2``, ``-p no:cacheprovider``) with ``-x`` and ``PYTHONPATH``
pointing at the copy's ``impl/``, so the copy's ``logwright`` is the one imported (checked before
each run). The unmutated copy runs first and must pass. A mutant is *caught* when the campaign
fails; the first failing test and the wall time to it are recorded (reported only, never
asserted): the ``mutation.first_failure`` plugin names it the moment it fails and the campaign is
stopped there.

Usage: ``python mutation/run.py [--list] [--check] [--only NAME]... [--json out/mutants.json]``.
Exit status: 0 every mutant caught, 1 some mutant survived, 2 a catalogue or baseline problem.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mutation.catalogue import MUTANTS, ROOT, Mutant, apply, by_name, check_all
from mutation.first_failure import ENV

IGNORED = shutil.ignore_patterns(
    ".git", ".venv", "out", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
    ".hypothesis", "*.egg-info", "build", "states", "*.jar",
    "mutants")  # mutmut 3 keeps its own mutated copy in ./mutants/
# The anchor check itself would fail on any mutated copy: it is not part of the campaign there.
CATALOGUE_TEST = "tests/test_mutation_catalogue.py"
FAILED_LINE = re.compile(r"^(FAILED|ERROR) (\S+)", re.MULTILINE)


@dataclass
class Outcome:
    """One campaign run: over the unmutated tree (``name`` = "baseline") or one mutant."""

    name: str
    file: str
    caught: bool
    first_failure: str | None
    seconds: float
    returncode: int
    loss: str = ""


def copy_tree(dest: Path) -> Path:
    """Copy the repository into ``dest``/tree; returns that path."""
    tree = dest / "tree"
    shutil.copytree(ROOT, tree, ignore=IGNORED, symlinks=True)
    return tree


def campaign_env(tree: Path) -> dict[str, str]:
    """The environment of a campaign in ``tree``: its ``impl/`` first on the path (its own
    ``logwright``, not the editable install), the tree itself (for the first-failure plugin),
    and the CI Hypothesis profile."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "impl"), str(tree)])
    env["HYPOTHESIS_PROFILE"] = "ci"
    env.pop("PYTEST_ADDOPTS", None)
    env.pop(ENV, None)
    return env


def check_imported(tree: Path, mutant: Mutant | None) -> None:
    """Fail loudly unless ``logwright`` imported in the campaign's environment is the copy's,
    and (for a mutant) the imported module's file carries the patch."""
    module = None
    if mutant is not None:
        module = mutant.file.removeprefix("impl/").removesuffix(".py").replace("/", ".")
    code = ("import importlib, logwright, sys; print(logwright.__file__); "
            f"m = {module!r}; print(importlib.import_module(m).__file__ if m else '')")
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, env=campaign_env(tree),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    package_file, module_file = Path(out[0]).resolve(), out[1]
    expected = (tree / "impl" / "logwright" / "__init__.py").resolve()
    if package_file != expected:
        raise SystemExit(f"the campaign would import {package_file}, not the copy {expected}")
    if mutant is not None:
        text = Path(module_file).read_text(encoding="utf-8")
        original = (ROOT / mutant.file).read_text(encoding="utf-8")
        if (Path(module_file).resolve() != (tree / mutant.file).resolve() or text == original
                or mutant.replacement not in text):
            raise SystemExit(f"mutant {mutant.name!r}: {module_file} is not the patched copy")


def run_campaign(tree: Path, name: str, file: str, timeout_s: float) -> Outcome:
    """``make test``'s pytest command with ``-x`` in ``tree``, stopped at its first failure.

    The first-failure plugin names the first failing test the moment it fails; the campaign is
    then stopped (``-x`` would otherwise wait for the tests still running on the other worker).
    """
    cmd = [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-x", "-rfE",
           "-p", "mutation.first_failure", "--ignore", CATALOGUE_TEST]
    marker = tree.parent / "first-failure.txt"
    env = campaign_env(tree)
    env[ENV] = str(marker)
    log_path = tree.parent / "pytest.log"
    start = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            while proc.poll() is None:
                if marker.exists() or time.monotonic() - start > timeout_s:
                    break
                time.sleep(0.1)
            seconds = time.monotonic() - start
            timed_out = proc.poll() is None and not marker.exists()
        finally:
            if proc.poll() is None:
                _stop(proc)
    output = log_path.read_text(encoding="utf-8", errors="replace")
    if timed_out:
        # A hang fails CI (its job times out), so it counts as caught, and is named as such.
        return Outcome(name, file, True, f"(timed out after {timeout_s:.0f} s)", seconds, -1)
    if marker.exists():
        return Outcome(name, file, True, marker.read_text(encoding="utf-8").strip(), seconds,
                       proc.returncode)
    failures = FAILED_LINE.findall(output)
    first = failures[0][1] if failures else None
    if proc.returncode != 0 and first is None:
        tail = output.strip().splitlines()[-1:] or ["?"]
        first = f"(pytest exit {proc.returncode}: {tail[0][:60]})"
    return Outcome(name, file, proc.returncode != 0, first, seconds, proc.returncode)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End the campaign and every process it started (its own session: the workers, and any
    subprocess a test runs), politely first."""
    for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 30.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def table(outcomes: list[Outcome]) -> Table:
    """One row per run: the mutant and, under it, the first failing test; verdict; seconds."""
    t = Table(title="Named-fault mutants under the CI campaign", title_justify="left",
              box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("mutant / first failing test", overflow="fold")
    t.add_column("verdict", no_wrap=True)
    t.add_column("s", justify="right", no_wrap=True)
    for o in outcomes:
        if o.name == "baseline":
            verdict = "[green]passes[/]" if not o.caught else "[red]FAILS[/]"
        else:
            verdict = "[green]caught[/]" if o.caught else "[red]SURVIVED[/]"
        cell = escape(o.name)
        if o.first_failure:
            where, _, test = o.first_failure.removeprefix("tests/").partition("::")
            cell += f"\n[dim]{escape(where)}" + (f"::\n{escape(test)}" if test else "") + "[/]"
        t.add_row(cell, verdict, f"{o.seconds:.0f}")
    return t


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--check", action="store_true",
                        help="only check that every anchor occurs exactly once")
    parser.add_argument("--only", action="append", metavar="NAME", default=[],
                        help="run only this mutant (repeatable)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the unmutated run (only with --only)")
    parser.add_argument("--json", type=Path, default=ROOT / "out" / "mutants.json")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds before a campaign counts as hung (default 900)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies")
    args = parser.parse_args(argv)
    console = Console(width=min(Console().width, 80))

    if args.list:
        for m in MUTANTS:
            console.print(f"[bold]{escape(m.name)}[/]  ({m.file})\n    {escape(m.loss)}")
        return 0
    problems = check_all()
    if problems:
        for p in problems:
            console.print(f"[red]catalogue:[/] {escape(p)}")
        return 2
    if args.check:
        console.print(f"all {len(MUTANTS)} anchors occur exactly once")
        return 0
    try:
        chosen = [by_name(n) for n in args.only] if args.only else list(MUTANTS)
    except KeyError as exc:
        console.print(f"[red]{escape(exc.args[0])}[/]")
        return 2
    if args.no_baseline and not args.only:
        parser.error("--no-baseline only with --only")

    outcomes: list[Outcome] = []
    work = Path(tempfile.mkdtemp(prefix="logwright-mutants-"))
    try:
        if not args.no_baseline:
            console.print("baseline: the unmutated tree ...")
            tree = copy_tree(work / "baseline")
            check_imported(tree, None)
            base = run_campaign(tree, "baseline", "-", args.timeout)
            outcomes.append(base)
            if base.caught:
                console.print(table(outcomes))
                console.print("[red]the unmutated tree fails the campaign: aborting[/]")
                return 2
        for i, m in enumerate(chosen, 1):
            console.print(escape(f"[{i}/{len(chosen)}] {m.name} ..."), soft_wrap=True)
            tree = copy_tree(work / f"m{i}")
            apply(m, tree)
            check_imported(tree, m)
            o = run_campaign(tree, m.name, m.file, args.timeout)
            o.loss = m.loss
            outcomes.append(o)
            verdict = f"caught by {o.first_failure}" if o.caught else "SURVIVED"
            console.print(escape(f"    {verdict} in {o.seconds:.0f} s"), soft_wrap=True)
            if not args.keep:
                shutil.rmtree(tree.parent, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            console.print(f"copies kept in {work}")

    console.print(table(outcomes))
    mutants = [o for o in outcomes if o.name != "baseline"]
    survivors = [o.name for o in mutants if not o.caught]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "campaign": "HYPOTHESIS_PROFILE=ci pytest -n 2 -p no:cacheprovider -x",
        "outcomes": [asdict(o) for o in outcomes],
        "caught": len(mutants) - len(survivors),
        "total": len(mutants),
        "survived": survivors,
    }, indent=2) + "\n", encoding="utf-8")
    console.print(f"{len(mutants) - len(survivors)}/{len(mutants)} caught; "
                  f"JSON in {args.json}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
