"""A small liveness checker for the twins: fair lassos found by strongly connected components.

What it upholds: a temporal property of the form TLC checks in FetcherFailure,
``<>[]Hold => []<><<Progress>>_vars`` under weak fairness of some actions, is checked on every
behaviour of the twin's reachable state graph, not only on its states. A behaviour violates it
exactly when it ends in a *fair cycle* that keeps ``Hold`` and never takes a progress step. Such
a cycle lives inside one strongly connected component (SCC) of the graph restricted to the
``Hold`` states and the non-progress steps, and the component has one exactly when, for every
weakly fair action, the action is disabled in one of the component's states or taken by one of
its steps (a run can go round the whole component forever, so it takes every step it offers).
A single state is such a component too: a behaviour may stutter there forever, fairly when every
fair action is disabled there.

The answer is a :class:`Lasso`: a shortest path from an initial state to the component, and a
cycle inside it through one step of each fair action that needs taking. Like TLC's, the lasso is
a witness, not the shortest one.

Safety invariants are :mod:`logwright.model.checker`'s; this module checks properties only, on
a complete exploration (it has no state budget beyond ``max_states``, which makes the answer
*incomplete*, never a verdict).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from logwright.model.core import INITIAL, Spec, State

StepsOf = Callable[[State], Iterable[State]]
"""An action (or a disjunction of actions) applied to a state: its successors."""


@dataclass(frozen=True)
class Progress:
    """One instance of ``<>[]hold => []<><<progress>>_vars`` under weak fairness.

    ``name`` is the TLA+ property's name, ``instance`` the value of its bound variable (e.g.
    ``"p=1"``), ``hold`` the state predicate, ``progress`` the successors by a progress step, and
    ``weakly_fair`` each weak fairness condition of the spec formula, by name, as its successors.
    """

    name: str
    instance: str
    hold: Callable[[State], bool]
    progress: StepsOf
    weakly_fair: Sequence[tuple[str, StepsOf]]


@dataclass
class Lasso:
    """A behaviour violating a property: ``prefix`` from an initial state, then ``cycle`` forever.

    ``prefix[0]`` is ``(INITIAL, s0)``; the last prefix state is where the cycle starts, and each
    cycle step is the action taken and the state it led to; the cycle ends where it started. An
    empty cycle is stuttering forever in the last prefix state.
    """

    property: str
    instance: str
    prefix: list[tuple[str, State]]
    cycle: list[tuple[str, State]]

    def __len__(self) -> int:
        return len(self.prefix) + len(self.cycle)

    def format(self, spec: Spec | None = None) -> str:
        """The lasso as TLC prints one: numbered states, then where the behaviour loops."""
        lines = [f"Property {self.property} ({self.instance}) is violated by this behaviour:"]

        def add(n: int, action: str, state: State) -> None:
            label = f"<{action}>" if action == INITIAL else action
            body = spec.describe(state) if spec is not None else repr(state)
            lines.append(f"State {n}: {label}")
            lines.extend("  " + part for part in body.splitlines())

        for n, (action, state) in enumerate(self.prefix, start=1):
            add(n, action, state)
        start = len(self.prefix)
        if not self.cycle:
            lines.append(f"State {start + 1}: Stuttering")
            return "\n".join(lines)
        for n, (action, state) in enumerate(self.cycle[:-1], start=start + 1):
            add(n, action, state)
        lines.append(f"Back to state {start}: {self.cycle[-1][0]}")
        return "\n".join(lines)


@dataclass
class LivenessResult:
    """The outcome of checking a spec's temporal properties on its whole state graph."""

    spec: str
    properties: tuple[str, ...]
    distinct: int
    edges: int
    seconds: float
    violation: Lasso | None = None
    complete: bool = True
    checked: int = 0
    """How many property instances were checked (each property once per bound value)."""
    components: int = field(default=0)
    """How many SCCs of restricted graphs were examined, over all instances."""

    @property
    def holds(self) -> bool:
        """Whether the exploration was complete and no fair lasso violates a property."""
        return self.complete and self.violation is None


def check_liveness(spec: Spec, progress: Sequence[Progress],
                   max_states: int | None = None) -> LivenessResult:
    """Check each :class:`Progress` instance on every behaviour of ``spec``.

    Explores the reachable graph breadth first (states within the spec's constraint), then looks
    for a fair lasso per instance; stops at the first violation.
    """
    started = time.perf_counter()
    names = tuple(dict.fromkeys(p.name for p in progress))
    from logwright.model.packed import PackedSpec

    if isinstance(spec, PackedSpec) and spec.packed_available() \
            and spec.packed_constraint(_no_codes()) is None:
        g = _explore_packed(spec, max_states)
    else:
        g = _explore(spec, max_states)
    edges = sum(len(out) for out in g.succ)
    result = LivenessResult(spec.name, names, len(g.states), edges, 0.0, complete=g.complete)
    if not g.complete:
        result.seconds = time.perf_counter() - started
        return result
    cache: dict[int, list[frozenset[int] | None]] = {}
    for prop in progress:
        result.checked += 1
        lasso, examined = _fair_lasso(prop, g, cache)
        result.components += examined
        if lasso is not None:
            result.violation = lasso
            break
    result.seconds = time.perf_counter() - started
    return result


@dataclass
class _Graph:
    """The reachable graph with states numbered in BFS order (so a number's parent is lower)."""

    states: list[State] = field(default_factory=list)
    index: dict[State, int] = field(default_factory=dict)
    succ: list[list[tuple[str, int]]] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    via: list[str] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    complete: bool = True

    def add(self, s: State, parent: int, action: str) -> int:
        n = len(self.states)
        self.states.append(s)
        self.index[s] = n
        self.succ.append([])
        self.parent.append(parent)
        self.via.append(action)
        self.depth.append(1 if parent < 0 else self.depth[parent] + 1)
        return n

    def trace(self, n: int) -> list[tuple[str, State]]:
        steps: list[tuple[str, State]] = []
        while n >= 0:
            steps.append((self.via[n], self.states[n]))
            n = self.parent[n]
        steps.reverse()
        return steps


def _no_codes() -> Any:
    import numpy as np

    return np.zeros(0, dtype=np.int64)


def _explore_packed(spec: Any, max_states: int | None) -> _Graph:
    """The reachable graph by the spec's batched successors: codes, decoded once per state."""
    import numpy as np

    g = _Graph()
    names = [name for name, _ in spec.actions()]
    number: dict[int, int] = {}
    for s in spec.init_states():
        code = spec.encode(s)
        if code not in number:
            number[code] = g.add(spec.decode(code), -1, INITIAL)
    frontier = np.array(list(number), dtype=np.int64)
    while frontier.size and g.complete:
        by_parent: list[list[tuple[str, int]]] = [[] for _ in range(frontier.size)]
        for b in spec.packed_successors(frontier):
            name = names[b.action]
            for i, code in zip(b.parents.tolist(), b.codes.tolist(), strict=True):
                by_parent[i].append((name, code))
        new: list[int] = []
        for i, code in enumerate(frontier.tolist()):
            n = number[code]
            out = g.succ[n]
            for name, c in by_parent[i]:
                m = number.get(c)
                if m is None:
                    m = number[c] = g.add(spec.decode(c), n, name)
                    new.append(c)
                    if max_states is not None and len(g.states) >= max_states:
                        g.complete = False
                out.append((name, m))
        frontier = np.array(new, dtype=np.int64)
    return g


def _explore(spec: Spec, max_states: int | None) -> _Graph:
    """The reachable graph one state at a time (states within the spec's constraint)."""
    g = _Graph()
    for s in spec.init_states():
        if spec.constraint(s) and s not in g.index:
            g.add(s, -1, INITIAL)
    actions = list(spec.actions())
    frontier = list(range(len(g.states)))
    while frontier and g.complete:
        nxt: list[int] = []
        for n in frontier:
            s = g.states[n]
            for name, fn in actions:
                for t in fn(s):
                    if not spec.constraint(t):
                        continue
                    m = g.index.get(t)
                    if m is None:
                        m = g.add(t, n, name)
                        nxt.append(m)
                        if max_states is not None and len(g.states) >= max_states:
                            g.complete = False
                    g.succ[n].append((name, m))
        frontier = nxt
    return g


def _fair_lasso(prop: Progress, g: _Graph,
                cache: dict[int, list[frozenset[int] | None]]) -> tuple[Lasso | None, int]:
    """A fair lasso violating ``prop``, and how many components were examined. ``cache`` keeps
    each fair action's successors per state across instances (they share their fairness)."""
    index = g.index
    hold = [prop.hold(s) for s in g.states]
    nodes = [n for n, ok in enumerate(hold) if ok]
    fair_steps: list[list[frozenset[int] | None]] = []
    for _name, steps in prop.weakly_fair:
        table = cache.setdefault(id(steps), [None] * len(g.states))
        for n in nodes:
            if table[n] is None:
                # a successor outside the graph (-1) still makes the action enabled
                table[n] = frozenset(index.get(t, -1) for t in steps(g.states[n])) - {n}
        fair_steps.append(table)

    def enabled(table: list[frozenset[int] | None], n: int) -> frozenset[int]:
        found = table[n]
        assert found is not None, "computed for every Hold state"
        return found

    # The restricted graph: steps between Hold states that are not progress steps (stuttering,
    # a step to the same state, is left out: it is always allowed and never helps fairness).
    graph: dict[int, list[tuple[str, int]]] = {}
    for n in nodes:
        forbidden = {index.get(t, -1) for t in prop.progress(g.states[n])}
        graph[n] = [(a, m) for a, m in g.succ[n] if m != n and hold[m] and m not in forbidden]
    best: tuple[int, list[int], list[tuple[int, int | None]]] | None = None
    examined = 0
    for component in _sccs(graph):
        examined += 1
        inside = set(component)
        # What the cycle must visit to be fair: per fair action, a state where it is disabled
        # (n, None) or a step that takes it (n, m).
        witnesses: list[tuple[int, int | None]] = []
        fair = True
        for table in fair_steps:
            off = next((n for n in component if not enabled(table, n)), None)
            if off is not None:
                witnesses.append((off, None))  # disabled there: weak fairness asks nothing
                continue
            taken = next(((n, m) for n in component for _a, m in graph[n]
                          if m in inside and m in enabled(table, n)), None)
            if taken is None:
                fair = False  # enabled all along the component and never taken inside it
                break
            witnesses.append(taken)
        if not fair:
            continue
        depth = min(g.depth[n] for n in component)
        if best is None or depth < best[0]:
            best = (depth, component, witnesses)
    if best is None:
        return None, examined
    _, component, witnesses = best
    # The simplest lasso: stutter forever in a state of the component where every fair action
    # is disabled, when there is one; else go round the component through every witness.
    calm = [n for n in component if all(not enabled(table, n) for table in fair_steps)]
    entry = min(calm or component, key=lambda n: (g.depth[n], n))
    prefix = g.trace(entry)
    cycle: list[tuple[str, int]] = []
    if not calm and len(component) > 1:
        inside = set(component)
        here = entry
        for n, target in witnesses:
            cycle += _path(graph, inside, here, n)
            here = n
            if target is not None:
                cycle.append((next(a for a, m in graph[n] if m == target), target))
                here = target
        cycle += _path(graph, inside, here, entry)
        if not cycle:  # a component of several states with nothing to take: go round it once
            first = next((a, m) for a, m in graph[entry] if m in inside)
            cycle = [first, *_path(graph, inside, first[1], entry)]
    return (Lasso(prop.name, prop.instance, prefix, [(a, g.states[m]) for a, m in cycle]),
            examined)


def _path(graph: dict[int, list[tuple[str, int]]], inside: set[int], start: int,
          goal: int) -> list[tuple[str, int]]:
    """A shortest path of steps from ``start`` to ``goal`` within ``inside`` (empty if equal)."""
    if start == goal:
        return []
    came: dict[int, tuple[int, str]] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        n = queue.popleft()
        for a, m in graph[n]:
            if m in inside and m not in seen:
                seen.add(m)
                came[m] = (n, a)
                if m == goal:
                    out: list[tuple[str, int]] = []
                    cur = m
                    while cur != start:
                        prev, action = came[cur]
                        out.append((action, cur))
                        cur = prev
                    out.reverse()
                    return out
                queue.append(m)
    raise AssertionError("a strongly connected component is connected")


def _sccs(graph: dict[int, list[tuple[str, int]]]) -> Iterable[list[int]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, i = work[-1]
            out = graph[v]
            if i < len(out):
                work[-1] = (v, i + 1)
                w = out[i][1]
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                component: list[int] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                yield component
