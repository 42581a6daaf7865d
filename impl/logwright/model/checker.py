"""A breadth-first explicit-state model checker with TLC's semantics.

What it upholds: every invariant of a :class:`~logwright.model.core.Spec` is evaluated in every
state the search computes, and the first violation found is reported with a shortest trace
(breadth-first order guarantees no shorter behaviour reaches a violating state).

The figures match TLC's (``-workers 1``), so that equal figures are evidence that the Python twin
and the TLA+ module are the same machine:

* a state outside the ``CONSTRAINT`` is checked against the invariants, counted as generated, but
  neither counted as distinct nor expanded (TLC's ``isInModel``);
* ``generated`` counts initial states and every successor computed, duplicates included;
* ``depth`` is the largest BFS level, the initial states being level 1.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from logwright.model.core import (
    INITIAL,
    CheckResult,
    Counterexample,
    Invariant,
    ProgressFn,
    SearchProgress,
    Spec,
    State,
)


def _first_violated(invariants: Sequence[Invariant], s: State) -> str | None:
    for name, holds in invariants:
        if not holds(s):
            return name
    return None


def _trace(parents: dict[State, tuple[State | None, str]], last: State) -> list[tuple[str, State]]:
    steps: list[tuple[str, State]] = []
    cur: State | None = last
    while cur is not None:
        parent, action = parents[cur]
        steps.append((action, cur))
        cur = parent
    steps.reverse()
    return steps


def check(spec: Spec, max_states: int | None = None, *, packed: bool | None = None,
          workers: int = 1, progress: ProgressFn | None = None) -> CheckResult:
    """Explore every state of ``spec`` reachable within its constraint, breadth first.

    Stops at the first invariant violation (as TLC does) or once ``max_states`` distinct states
    were found (then ``complete`` is False). When the spec offers the batched fast path
    (:class:`~logwright.model.packed.PackedSpec`) it is used unless ``packed=False``; both
    engines find the same states, counts and shortest traces. ``workers`` threads share the
    packed engine's work (the generic engine uses one); ``progress`` is called as the search
    goes (after each level, and every 250,000 distinct states of the generic engine).
    """
    from logwright.model.packed import PackedSpec, check_packed

    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if isinstance(spec, PackedSpec) and packed is not False and spec.packed_available():
        return check_packed(spec, max_states, workers=workers, progress=progress)
    if packed:
        raise ValueError(f"{spec.name} offers no packed fast path with these constants")
    return check_generic(spec, max_states, progress=progress)


GENERIC_PROGRESS_EVERY = 250_000
"""The generic engine reports progress each time this many more distinct states are found."""


def check_generic(spec: Spec, max_states: int | None = None, *,
                  progress: ProgressFn | None = None) -> CheckResult:
    """The reference engine: one state at a time, states as the spec's own hashable values."""
    started = time.perf_counter()
    invariants = list(spec.invariants())
    actions: list[tuple[str, Callable[[State], object]]] = [
        (name, fn) for name, fn in spec.actions()
    ]
    constraint = spec.constraint
    # Each distinct in-model state maps to (parent, action that produced it): the BFS tree, from
    # which a shortest trace to any state is read back.
    parents: dict[State, tuple[State | None, str]] = {}
    generated = 0
    limit = max_states if max_states is not None else -1

    def result(depth: int, violation: Counterexample | None = None, complete: bool = True,
               left: int = 0) -> CheckResult:
        return CheckResult(spec.name, generated, len(parents), depth,
                           time.perf_counter() - started, violation, complete, "generic", left)

    frontier: list[State] = []
    for s in spec.init_states():
        generated += 1
        if constraint(s):
            if s in parents:
                continue
            parents[s] = (None, INITIAL)
            frontier.append(s)
        bad = _first_violated(invariants, s)
        if bad is not None:
            return result(1, Counterexample(bad, [(INITIAL, s)]), left=len(frontier))

    # The hot loop: a spec without a CONSTRAINT skips the call, and invariants are inlined.
    unconstrained = type(spec).constraint is Spec.constraint
    depth = 1 if frontier else 0
    if progress is not None and frontier:
        progress(SearchProgress(1, generated, len(parents), len(frontier),
                                time.perf_counter() - started))
    report_at = GENERIC_PROGRESS_EVERY if progress is not None else -1
    while frontier:
        successors: list[State] = []
        append = successors.append
        for i, s in enumerate(frontier):
            for name, fn in actions:
                for t in fn(s):  # type: ignore[attr-defined]
                    generated += 1
                    in_model = unconstrained or constraint(t)
                    if in_model:
                        if t in parents:
                            continue
                        parents[t] = (s, name)
                        append(t)
                    for inv_name, holds in invariants:
                        if not holds(t):
                            steps = (_trace(parents, t) if in_model
                                     else [*_trace(parents, s), (name, t)])
                            left = len(frontier) - i - 1 + len(successors)
                            return result(len(steps), Counterexample(inv_name, steps), left=left)
                    if len(parents) == limit:
                        return result(depth + 1, complete=False,
                                      left=len(frontier) - i - 1 + len(successors))
                    if len(parents) == report_at:
                        assert progress is not None
                        report_at += GENERIC_PROGRESS_EVERY
                        progress(SearchProgress(depth + 1, generated, len(parents),
                                                len(frontier) - i - 1 + len(successors),
                                                time.perf_counter() - started))
        if successors:
            depth += 1
            if progress is not None:
                progress(SearchProgress(depth, generated, len(parents), len(successors),
                                        time.perf_counter() - started))
        frontier = successors
    return result(depth)
