"""The formal layer's rows of ``logwright verify``: the Python model checker, Z3 and TLC.

What it upholds: every safety invariant of every TLA+ module with a Python twin is checked by
each method available, every bug switch is shown to be caught, and the Python twin is shown to be
the same machine as the TLA+ module (its distinct-state count and depth equal the TLC figures
checked in as spec/tlc_figures.json). A module is found through the registry
:data:`logwright.model.SPECS`; its .cfg files are ``spec/<Module>.cfg`` (correct) and
``spec/<Module>_bug_<Bug>.cfg`` (one bug switched on each); its Z3 encoding, if any, is
``spec/z3/<snake_module>.py`` with ``prove(bug="none") -> list[ProofResult]``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import logwright
from logwright.verify.core import Row, Verdict, run_check

SHIPPED_SPEC = "_spec"
"""The directory inside the installed package that holds a copy of spec/ (see setup.py)."""

MAX_STATES_FACTOR = 10
"""The Python checker stops (UNDECIDED) after this many times TLC's distinct-state count."""
MAX_STATES_DEFAULT = 2_000_000
"""... or after this many distinct states where no TLC figure is recorded."""

Z3_PACKAGE = "logwright_spec_z3"
"""The name spec/z3 is loaded under (its own name, ``z3``, belongs to z3-solver)."""


def spec_dir() -> Path:
    """Where the TLA+ modules, .cfg files, TLC figures and Z3 encodings are.

    In order: ``$LOGWRIGHT_SPEC_DIR``; spec/ of the source tree when logwright runs from one (an
    editable install or a checkout); else the copy shipped inside the installed package
    (``logwright/_spec``, put there when the wheel is built).
    """
    override = os.environ.get("LOGWRIGHT_SPEC_DIR")
    if override:
        return Path(override)
    package = Path(logwright.__file__).resolve().parent
    source = package.parents[1] / "spec"
    if (source / "tlc_figures.json").is_file():
        return source
    return package / SHIPPED_SPEC


def snake_case(module: str) -> str:
    """``LogStartOffset`` -> ``log_start_offset``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", module).lower()


def load_z3_module(module: str, root: Path | None = None) -> ModuleType | None:
    """The Z3 encoding of TLA+ module ``module`` (spec/z3/<snake>.py), or None if it has none."""
    z3_dir = (root or spec_dir()) / "z3"
    path = z3_dir / f"{snake_case(module)}.py"
    if not path.is_file():
        return None
    package = sys.modules.get(Z3_PACKAGE)
    if package is None or Path(getattr(package, "__file__", "")).parent != z3_dir:
        for name in [n for n in sys.modules if n == Z3_PACKAGE or n.startswith(Z3_PACKAGE + ".")]:
            del sys.modules[name]  # a different spec/ than the one loaded before
        loader_spec = importlib.util.spec_from_file_location(
            Z3_PACKAGE, z3_dir / "__init__.py", submodule_search_locations=[str(z3_dir)])
        if loader_spec is None or loader_spec.loader is None:
            raise ImportError(f"cannot load {z3_dir} as a package")
        package = importlib.util.module_from_spec(loader_spec)
        sys.modules[Z3_PACKAGE] = package
        loader_spec.loader.exec_module(package)
    return importlib.import_module(f"{Z3_PACKAGE}.{snake_case(module)}")


def tlc_figures(root: Path | None = None) -> dict[str, dict[str, Any]]:
    """The checked-in TLC figures, one entry per .cfg file name."""
    path = (root or spec_dir()) / "tlc_figures.json"
    if not path.is_file():
        return {}
    data: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def configs(module: str, root: Path | None = None) -> tuple[Path, list[Path]]:
    """The correct .cfg of ``module`` and its bug .cfg files: one per bug switch of the
    module's table (:data:`logwright.model.BUG_TABLES`), in file-name order. A module without a
    table falls back to the ``<Module>_bug_*.cfg`` files present."""
    from logwright.model import BUG_TABLES

    base = root or spec_dir()
    table = BUG_TABLES.get(module)
    if table is None:
        return base / f"{module}.cfg", sorted(base.glob(f"{module}_bug_*.cfg"))
    return base / f"{module}.cfg", sorted(base / table.cfg_name(bug) for bug in table.names)


def cfg_label(module: str, cfg: Path) -> str:
    """``X.cfg`` for the correct model, ``X, bug Y`` for ``X_bug_Y.cfg``: words the table can
    wrap at 80 columns."""
    return f"{module}, bug {bug_of(cfg)}" if "_bug_" in cfg.stem else cfg.name


def bug_of(cfg: Path) -> str:
    """``X_bug_Y.cfg`` -> ``Y``."""
    return cfg.stem.split("_bug_", 1)[1]


def _figures_note(found: dict[str, Any], expected: dict[str, Any] | None,
                  names: tuple[str, ...] = ("distinct", "depth")) -> tuple[bool, str]:
    """Whether the found figures (``names``) equal TLC's, and a note saying so."""
    if expected is None:
        return True, "no TLC figures recorded"
    keys = [k for k in names if expected.get(k) is not None]
    diffs = [f"{k} {found.get(k)} vs TLC {expected[k]}" for k in keys
             if found.get(k) != expected[k]]
    if diffs:
        return False, "DIFFERS from TLC: " + ", ".join(diffs)
    return True, "= TLC figures"


def _max_states(expected: dict[str, Any] | None) -> int:
    """The Python checker's budget of distinct states for one .cfg: a count, never a time."""
    distinct = (expected or {}).get("distinct")
    return MAX_STATES_FACTOR * int(distinct) if distinct else MAX_STATES_DEFAULT


def model_checker_rows(module: str, root: Path | None = None) -> list[Row]:
    """The Python checker on the module's correct .cfg and on each bug .cfg."""
    from logwright.model import SPECS, check

    spec_class = SPECS[module]
    figures = tlc_figures(root)
    correct, bugs = configs(module, root)
    rows: list[Row] = []
    if correct.is_file():
        spec = spec_class.from_cfg(correct)  # type: ignore[attr-defined]
        result = check(spec, _max_states(figures.get(correct.name)))
        names = ", ".join(n for n, _ in spec.invariants() if n != "TypeOK")
        # generated too: the suite compares some modules on a smaller .cfg only
        # (tests/test_model_conformance.py, SUITE_CFG), so this is where the full one's is
        same, note = _figures_note({"distinct": result.distinct, "depth": result.depth,
                                    "generated": result.generated},
                                   figures.get(correct.name), ("distinct", "depth", "generated"))
        if result.violation is not None:
            verdict = Verdict.VIOLATED
            note = result.violation.format(spec)
        elif not result.complete:
            verdict = Verdict.UNDECIDED
            note = f"stopped at its budget of {result.distinct:,} distinct states"
        elif not same:
            verdict = Verdict.ERROR
        else:
            verdict = Verdict.HOLDS
        rows.append(Row(names, f"python checker ({correct.name})", verdict, result.distinct,
                        result.seconds,
                        f"depth {result.depth}, {result.states_per_second:,.0f} distinct/s "
                        f"({result.engine}), {note}",
                        {"generated": result.generated, "depth": result.depth}))
        rows += liveness_rows(spec, correct, figures.get(correct.name))
    for cfg in bugs:
        spec = spec_class.from_cfg(cfg)  # type: ignore[attr-defined]
        expected = figures.get(cfg.name, {})
        if expected.get("violation") in _properties(spec):
            rows += liveness_rows(spec, cfg, expected, bug=bug_of(cfg))
            continue
        result = check(spec, _max_states(expected))
        want = expected.get("violation")
        v = result.violation
        if v is None and not result.complete:
            verdict = Verdict.UNDECIDED
            detail = f"no violation within its budget of {result.distinct:,} distinct states"
        elif v is None:
            verdict, detail = Verdict.MISSED, "no violation found"
        elif want is not None and v.invariant != want:
            verdict, detail = Verdict.MISSED, f"violated {v.invariant}, TLC violates {want}"
        elif expected.get("depth") is not None and len(v) != expected["depth"]:
            verdict = Verdict.ERROR
            detail = f"trace of {len(v)} states, TLC's has {expected['depth']}"
        else:
            verdict = Verdict.CAUGHT
            detail = (f"{v.invariant} violated after {len(v)} states"
                      + (" (= TLC)" if want is not None else " (no TLC figures recorded)"))
        rows.append(Row(v.invariant if v is not None else (want or "?"),
                        f"python checker ({module}, bug {bug_of(cfg)})", verdict, result.distinct,
                        result.seconds, detail,
                        {"trace": v.format(spec)} if v is not None else {}))
    return rows


def _properties(spec: Any) -> tuple[str, ...]:
    """The temporal properties a twin's .cfg lists (none for a twin without any)."""
    config = getattr(spec, "config", None)
    return tuple(getattr(config, "properties", ()))


def liveness_rows(spec: Any, cfg: Path, expected: dict[str, Any] | None,
                  bug: str | None = None) -> list[Row]:
    """The twin's temporal properties on ``cfg`` by the Python lasso check
    (:mod:`logwright.model.liveness`): HOLDS / VIOLATED on a correct model, CAUGHT / MISSED
    on a bug's. No rows for a .cfg that lists no property."""
    from logwright.model.liveness import check_liveness

    names = _properties(spec)
    if not names or not hasattr(spec, "temporal_properties"):
        return []
    budget = _max_states(expected)
    result = check_liveness(spec, spec.temporal_properties(), max_states=budget)
    label = ", ".join(names)
    v = result.violation
    method = (f"python lasso check ({cfg.name})" if bug is None
              else f"python lasso check ({spec.name}, bug {bug})")
    figures = f"{result.distinct:,} states, {result.edges:,} steps, {result.components:,} SCCs"
    if not result.complete:
        return [Row(label, method, Verdict.UNDECIDED, result.distinct, result.seconds,
                    f"stopped at its budget of {result.distinct:,} distinct states")]
    if bug is None:
        same, note = _figures_note(  # TLC's depth is a BFS figure; a lasso check has none
            {"distinct": result.distinct},
            None if expected is None else {"distinct": expected.get("distinct")})
        verdict = (Verdict.VIOLATED if v is not None else
                   Verdict.HOLDS if same else Verdict.ERROR)
        detail = v.format(spec) if v is not None else f"{figures}, no fair lasso; {note}"
        return [Row(label, method, verdict, result.distinct, result.seconds, detail)]
    want = (expected or {}).get("violation")
    caught = v is not None and (want is None or v.property == want)
    detail = (f"{v.property} ({v.instance}) violated by a lasso of {len(v)} states; {figures}"
              if v is not None else f"no fair lasso; {figures}")
    return [Row(v.property if v is not None else (want or label), method,
                Verdict.CAUGHT if caught else Verdict.MISSED, result.distinct, result.seconds,
                detail, {"trace": v.format(spec)} if v is not None else {})]


def z3_rows(module: str, root: Path | None = None, rlimit: int | None = None) -> list[Row]:
    """The module's Z3 proofs, and a counterexample for each bug switch.

    Every z3 call runs under a deterministic resource limit (``rlimit``; None: the encoding's
    defaults), so a proof that runs out of it is UNDECIDED, the same on any machine."""
    z3_module = load_z3_module(module, root)
    if z3_module is None:
        return []
    prove = z3_module.prove
    limits = {"rlimit": rlimit} if rlimit is not None else {}
    rows: list[Row] = []
    for p in prove("none", **limits):
        if p.holds:
            verdict = Verdict.HOLDS
        elif p.counterexample:
            verdict = Verdict.VIOLATED
        elif getattr(p, "undecided", False):
            verdict = Verdict.UNDECIDED  # the resource limit ran out: neither proof nor bug
        else:
            verdict = Verdict.ERROR  # decided, but the stated strengthening is too weak
        rows.append(Row(p.invariant, f"{p.method} ({module})", verdict, 1, p.seconds, p.detail,
                        {"counterexample": p.counterexample} if p.counterexample else {}))
    from logwright.model import BUG_TABLES

    _, bugs = configs(module, root)
    safety = set(getattr(z3_module, "INVARIANTS", ()))
    table = BUG_TABLES.get(module)
    for cfg in bugs:
        bug = bug_of(cfg)
        breaks = table.expected_violation.get(bug) if table is not None else None
        if safety and breaks is not None and breaks not in safety:
            # Lost progress only: Z3 checks safety, so it shows the bug is otherwise safe.
            started = time.perf_counter()
            results = prove(bug, **limits)
            safe = all(p.holds for p in results)
            rows.append(Row(", ".join(p.invariant for p in results),
                            f"z3 ({module}, bug {bug})",
                            Verdict.HOLDS if safe else Verdict.UNDECIDED, len(results),
                            time.perf_counter() - started,
                            f"{'holds' if safe else 'not proved'} with the bug on: it breaks "
                            f"{breaks}, a temporal property (TLC and the python lasso check "
                            "catch it; Z3 checks safety only); "
                            + "; ".join(p.detail for p in results)))
            continue
        started = time.perf_counter()
        results = prove(bug, **limits)
        refuted = [p for p in results if not p.holds and p.counterexample]
        undecided = [p for p in results if getattr(p, "undecided", False)]
        if refuted:
            p = refuted[0]
            # The full trace is in ``extra``; the table names the step that breaks the invariant.
            last = p.counterexample[-1].split(":", 1)[0] if p.counterexample else ""
            rows.append(Row(p.invariant, f"{p.method} ({module}, bug {bug})", Verdict.CAUGHT,
                            1, time.perf_counter() - started, f"{p.detail}; last step: {last}",
                            {"counterexample": p.counterexample}))
        elif undecided:
            p = undecided[0]
            rows.append(Row(p.invariant, f"{p.method} ({module}, bug {bug})", Verdict.UNDECIDED,
                            1, time.perf_counter() - started, p.detail))
        else:
            names = ", ".join(p.invariant for p in results) or "?"
            detail = "; ".join(p.detail for p in results) or "no counterexample found"
            rows.append(Row(names, f"z3 ({module}, bug {bug})", Verdict.MISSED, 1,
                            time.perf_counter() - started, detail))
    return rows


def tlc_rows(module: str, root: Path | None = None) -> list[Row]:
    """SANY and TLC on the module and each of its .cfg files (TLC must be installed)."""
    from logwright.verify.tlc import run_sany, run_tlc

    base = root or spec_dir()
    tla = base / f"{module}.tla"
    sany = run_sany(tla)
    rows = [Row(module, "SANY", Verdict.HOLDS if sany.ok else Verdict.ERROR, 1, sany.seconds,
                "parsed and checked" if sany.ok else sany.output.strip()[-300:])]
    if not sany.ok:
        return rows
    figures = tlc_figures(root)
    correct, bugs = configs(module, root)
    # A module whose liveness needs smaller bounds has a correct <Module>_liveness.cfg too.
    liveness = correct.with_name(f"{module}_liveness.cfg")
    holds = [c for c in (correct, liveness) if c.is_file()]
    for cfg in holds + bugs:
        r = run_tlc(tla, cfg)
        expected = figures.get(cfg.name)
        method = f"TLC ({cfg_label(module, cfg)})"
        if not r.ok:
            rows.append(Row(module, method, Verdict.ERROR, 0, r.seconds, r.error or ""))
            continue
        if cfg in holds:
            same, note = _figures_note({"distinct": r.distinct, "depth": r.depth}, expected)
            verdict = (Verdict.VIOLATED if r.violation else
                       Verdict.HOLDS if same else Verdict.ERROR)
            detail = (f"{r.violation} violated" if r.violation else
                      f"depth {r.depth}, {r.states_per_second:,.0f} distinct/s, {note}")
            rows.append(Row(module, method, verdict, r.distinct or 0, r.seconds, detail))
        else:
            want = (expected or {}).get("violation")
            caught = r.violation is not None and (want is None or r.violation == want)
            rows.append(Row(r.violation or (want or "?"), method,
                            Verdict.CAUGHT if caught else Verdict.MISSED, r.distinct or 0,
                            r.seconds,
                            f"{r.violation} violated after {len(r.trace)} states" if caught
                            else f"expected {want}, TLC reported {r.violation}"))
    return rows


def formal_suite(modules: Sequence[str] | None = None) -> list[Row]:
    """Every module with a Python twin (or only ``modules``, in the registry's order): the
    Python checker, Z3, and TLC when installed."""
    from logwright.model import SPECS
    from logwright.verify.tlc import tlc_missing

    chosen = [m for m in SPECS if modules is None or m in modules]
    rows: list[Row] = []
    for module in chosen:
        rows += _check(module, "python checker", model_checker_rows)
        rows += _check(module, "z3", z3_rows)
    missing = tlc_missing()
    if missing is not None:
        rows.append(Row("(all TLA+ modules)", "TLC", Verdict.SKIPPED, detail=missing))
    else:
        for module in chosen:
            rows += _check(module, "TLC", tlc_rows)
    return rows


def _check(module: str, method: str, fn: Callable[[str], list[Row]]) -> list[Row]:
    """One module's rows by one method, with progress lines; a module whose check crashes
    becomes one ERROR row, not a lost suite."""
    return run_check(f"{module}: {method}", lambda: fn(module), invariant=module, method=method)
