"""``logwright verify``'s suite "agreement": each packed encoding against its readable twin.

What it upholds: the model checker's fast path (a module's ``packed.py``, numpy over codes) and
the readable twin (its ``twin.py``, one method per TLA+ action) are one machine on every state
reachable under every shipped .cfg of the module, the correct one and each bug's: the same
successors by each action, the same invariant and constraint verdicts, and codes that decode
to the states they encode (:func:`logwright.model.agreement.compare_with_twin`). A change to a
twin that its packed encoding does not follow, or the reverse, fails here on the first state
where it matters, with that state and the successors only one side has.

The .cfg files are compared in parallel, one process per core (each walk is single-threaded
Python), and reported module by module. Every walk is bounded by a count of states, never by
time: one row per .cfg, ``holds`` when the whole reachable space agrees, ``VIOLATED`` at a
disagreement, ``UNDECIDED`` if the budget ran out first.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from pathlib import Path

from logwright.verify.core import Row, Verdict, run_check
from logwright.verify.formal import cfg_label, configs

MAX_STATES = 2_000_000
"""A walk stops (UNDECIDED) after this many distinct states: a count, never a time."""

INVARIANT = "PackedIsTwin"
"""The row's name: the packed encoding is the readable twin."""


def packed_modules(modules: Sequence[str] | None = None) -> list[str]:
    """The registry's modules (or only ``modules``) whose twin has a packed encoding."""
    from logwright.model import SPECS
    from logwright.model.packed import PackedSpec

    return [m for m, cls in SPECS.items()
            if (modules is None or m in modules) and issubclass(cls, PackedSpec)]


def compare_cfg(module: str, cfg: str, max_states: int = MAX_STATES) -> Row:
    """One .cfg of ``module``: the packed encoding against the twin on every reachable state."""
    from logwright.model import SPECS
    from logwright.model.agreement import compare_with_twin
    from logwright.model.packed import PackedSpec

    path = Path(cfg)
    method = f"packed vs twin ({cfg_label(module, path)})"
    spec = SPECS[module].from_cfg(path)  # type: ignore[attr-defined]
    if not isinstance(spec, PackedSpec) or not spec.packed_available():
        return Row(INVARIANT, method, Verdict.SKIPPED,
                   detail="no packed encoding with these constants (the generic engine runs "
                          "them): nothing to compare")
    a = compare_with_twin(spec, max_states)
    figures = f"{a.states:,} states, {a.successors:,} successors, depth {a.depth}"
    if a.disagreement is not None:
        return Row(INVARIANT, method, Verdict.VIOLATED, a.states, a.seconds,
                   f"after {figures}: {a.disagreement}")
    if not a.complete:
        return Row(INVARIANT, method, Verdict.UNDECIDED, a.states, a.seconds,
                   f"stopped at its budget of {max_states:,} distinct states; {figures} agree")
    return Row(INVARIANT, method, Verdict.HOLDS, a.states, a.seconds,
               f"every reachable state agrees: {figures}")


def agreement_suite(modules: Sequence[str] | None = None, workers: int | None = None) -> list[Row]:
    """Every shipped .cfg of every module with a packed encoding (or only ``modules``), compared
    on ``workers`` processes (default: one per core)."""
    jobs: dict[str, list[str]] = {}
    for module in packed_modules(modules):
        correct, bugs = configs(module)
        jobs[module] = [str(c) for c in (correct, *bugs) if c.is_file()]
    count = sum(len(cfgs) for cfgs in jobs.values())
    if not count:
        return []
    processes = max(1, min(workers or os.cpu_count() or 1, count))
    # spawn: a fresh interpreter per worker, never a fork of a process that may run threads
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        # Each module's files are submitted last first: a module's largest walk is usually a
        # bug's (the bug opens states the correct model never reaches), and LogStartOffset's
        # last bug .cfg is the longest of all; started first, it runs beside the others
        # instead of after them. The rows keep the files' order.
        submitted = {(m, cfg): pool.submit(compare_cfg, m, cfg)
                     for m, cfgs in jobs.items() for cfg in reversed(cfgs)}
        futures = {m: [submitted[(m, cfg)] for cfg in cfgs] for m, cfgs in jobs.items()}
        rows: list[Row] = []
        for module, pending in futures.items():
            rows += run_check(f"{module}: packed vs twin", partial(_results, pending),
                              invariant=INVARIANT, method=f"packed vs twin ({module})")
    return rows


def _results(pending: list[Future[Row]]) -> list[Row]:
    return [f.result() for f in pending]


__all__ = ["INVARIANT", "MAX_STATES", "agreement_suite", "compare_cfg", "packed_modules"]
