"""Test cases generated from a twin, for any module: covering paths, bug counterexamples, and
the runner that drives a case through the implementation and compares states move by move.

What it upholds: a generated case is a path of genuine twin steps, and a case passes only if,
after every move, the implementation's abstract state (a driver's) equals the twin's; for a
bug's counterexample, the implementation must be where the *correct* twin is from the move
where the bug acts on (:func:`run_case`).

A *move* (:class:`Move`) is an action with its parameters, as the driver performs it; a module
gives the twin's meaning of a move (``step``: the successor, or None when the twin does not
enable it) and the moves worth trying from a state (``moves_of``, refused ones included: a
fenced request is delivered, and the twin's "not enabled" is then the expectation that nothing
changes). The LogStartOffset one-replica generator (:mod:`~logwright.conformance.model_based`)
predates this module and keeps its own; the cluster ones (ControllerFencing, FetcherFailure,
LogStartOffset with two replicas) use it.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from logwright.errors import LogwrightError
from logwright.model.checker import check
from logwright.model.core import INITIAL, Spec, State


class ModelDivergence(LogwrightError):
    """The implementation and the model, given the same move, reached different states (or the
    implementation followed a bug's counterexample)."""


class Move(NamedTuple):
    """One action of the twin with its parameters, as a driver performs it."""

    action: str
    args: tuple[object, ...] = ()

    def __str__(self) -> str:
        if not self.args:
            return self.action
        return f"{self.action}({', '.join(str(a) for a in self.args)})"


Step = Callable[[State, Move], State | None]
"""The twin's successor of a state under a move (None: not enabled there)."""

MovesOf = Callable[[State], Iterable[Move]]
"""The moves worth trying from a state (the generator's alphabet)."""

GoalsOf = Callable[[State, Move, State | None], Iterable[str]]
"""The coverage goals a move from a state reaches (its result None: the twin refuses it)."""


@dataclass(frozen=True)
class Case:
    """One generated test: moves, and the twin's state after each (``states[0]`` initial).

    For a bug's counterexample, ``bug`` names it, ``states`` are the buggy twin's,
    ``bug_step`` is the index in ``moves`` of the move where the bug acts (the first at which
    the correct twin goes elsewhere or refuses) and ``invariant`` the one it breaks."""

    module: str
    moves: tuple[Move, ...]
    states: tuple[State, ...]
    bug: str = "none"
    bug_step: int | None = None
    invariant: str | None = None
    goals: tuple[str, ...] = field(default=(), compare=False)

    @property
    def id(self) -> str:
        """A readable test id: the module, the bug if any, and the moves."""
        path = "-".join(str(m).replace(" ", "") for m in self.moves)
        where = self.module if self.bug == "none" else f"{self.module}:{self.bug}"
        return f"{where}:{path}"


@dataclass
class Coverage:
    """A generated covering set and what it reached."""

    cases: list[Case]
    reached: dict[str, str]
    """goal -> the id of the case that reaches it."""
    unreachable: list[str]
    states: int


def covering_cases(module: str, twin: Spec, moves_of: MovesOf, step: Step, goals_of: GoalsOf,
                   goals: Sequence[str], seed: int) -> Coverage:
    """The shortest path to every reachable goal of ``twin`` (a breadth-first search over
    its states, the moves from each tried in an order shuffled by ``seed``; states violating
    an invariant are neither goals nor expanded). A refused move reaches its goals as a path
    to its state and the move, the state unchanged. Paths that are prefixes of others are
    dropped."""
    rng = random.Random(seed)
    invariants = [holds for _, holds in twin.invariants()]
    inits = list(twin.init_states())
    parents: dict[State, tuple[State | None, Move | None]] = {s: (None, None) for s in inits}
    frontier: deque[State] = deque(inits)
    found: dict[str, tuple[State, Move, State]] = {}
    wanted = set(goals)
    while frontier and wanted - set(found):
        s = frontier.popleft()
        moves = list(moves_of(s))
        rng.shuffle(moves)
        for move in moves:
            t = step(s, move)
            if t is not None and not all(holds(t) for holds in invariants):
                continue
            for goal in goals_of(s, move, t):
                found.setdefault(goal, (s, move, s if t is None else t))
            if t is not None and t not in parents:
                parents[t] = (s, move)
                frontier.append(t)
    paths: dict[str, tuple[tuple[Move, ...], tuple[State, ...]]] = {}
    for goal, (s, move, t) in found.items():
        moves_to, states_to = _path(parents, s)
        paths[goal] = ((*moves_to, move), (*states_to, t))
    by_moves = dict(paths.values())
    kept = sorted((k for k in by_moves if not any(o != k and o[:len(k)] == k for o in by_moves)),
                  key=lambda k: (len(k), [str(m) for m in k]))
    cases = [Case(module, k, by_moves[k],
                  goals=tuple(sorted(g for g, (m, _) in paths.items() if k[:len(m)] == m)))
             for k in kept]
    reached = {g: next(c.id for c in cases if g in c.goals) for g in sorted(found)}
    return Coverage(cases, reached, [g for g in goals if g not in found], len(parents))


def _path(parents: dict[State, tuple[State | None, Move | None]],
          leaf: State) -> tuple[list[Move], list[State]]:
    moves: list[Move] = []
    states: list[State] = []
    cur: State | None = leaf
    while cur is not None:
        parent, move = parents[cur]
        states.append(cur)
        if move is not None:
            moves.append(move)
        cur = parent
    return moves[::-1], states[::-1]


@dataclass(frozen=True)
class BugReport:
    """A bug switch: its counterexample as a case, or why there is none."""

    bug: str
    case: Case | None
    reason: str


def bug_case(module: str, bug: str, buggy: Spec, correct_step: Step, buggy_step: Step,
             moves_of: MovesOf) -> BugReport:
    """The shortest counterexample of ``buggy`` (the Python checker's), each of its steps
    named by the move of ``moves_of`` that takes it, as a case; its ``bug_step`` is where
    ``correct_step`` first goes elsewhere."""
    result = check(buggy)
    if result.violation is None:
        return BugReport(bug, None, f"no invariant violation ({result.distinct} states)")
    steps = result.violation.steps
    assert steps[0][0] == INITIAL
    states: list[State] = [steps[0][1]]
    moves: list[Move] = []
    for label, t in steps[1:]:
        s = states[-1]
        move = next((m for m in moves_of(s) if m.action.startswith(label.split("(")[0])
                     and buggy_step(s, m) == t), None)
        if move is None:
            move = next((m for m in moves_of(s) if buggy_step(s, m) == t), None)
        if move is None:
            raise ModelDivergence(f"{module} {bug}: the counterexample's step {label} is no move")
        moves.append(move)
        states.append(t)
    bug_step = next(i for i, m in enumerate(moves) if correct_step(states[i], m) != states[i + 1])
    case = Case(module, tuple(moves), tuple(states), bug=bug, bug_step=bug_step,
                invariant=result.violation.invariant)
    return BugReport(bug, case, f"counterexample of {len(moves)} moves, the bug acting at move "
                                f"{bug_step + 1} ({moves[bug_step]})")


def shortest_violation(module: str, bug: str, buggy: Spec, buggy_step: Step,
                       correct_step: Step, moves_of: MovesOf,
                       max_states: int = 200_000) -> BugReport:
    """The shortest path of moves of ``moves_of`` (each taken by ``buggy_step``) from the
    buggy twin's initial state to a state violating one of its invariants, as a case: for a
    module whose moves are not single twin steps (several steps the implementation takes
    together are one move), where the checker's counterexample cannot be named move by move."""
    invariants = list(buggy.invariants())
    inits = list(buggy.init_states())
    parents: dict[State, tuple[State | None, Move | None]] = {s: (None, None) for s in inits}
    frontier: deque[State] = deque(inits)
    while frontier and len(parents) < max_states:
        s = frontier.popleft()
        for move in moves_of(s):
            t = buggy_step(s, move)
            if t is None or t in parents:
                continue
            parents[t] = (s, move)
            broken = next((name for name, holds in invariants if not holds(t)), None)
            if broken is not None:
                moves, states = _path(parents, t)
                k = next(i for i, m in enumerate(moves)
                         if correct_step(states[i], m) != states[i + 1])
                case = Case(module, tuple(moves), tuple(states), bug=bug, bug_step=k,
                            invariant=broken)
                return BugReport(bug, case, f"shortest violation in {len(moves)} moves, the "
                                            f"bug acting at move {k + 1} ({moves[k]})")
            frontier.append(t)
    return BugReport(bug, None, f"no invariant violation in {len(parents)} states")


def expected_states(case: Case, correct_step: Step) -> list[State]:
    """What the implementation must show after each move: the case's states, and for a bug
    case, from the move where the bug acts, the correct twin's (the state before, where the
    correct twin refuses the move)."""
    if case.bug_step is None:
        return list(case.states)
    out = list(case.states[:case.bug_step + 1])
    for move in case.moves[case.bug_step:]:
        nxt = correct_step(out[-1], move)
        out.append(out[-1] if nxt is None else nxt)
    return out


class Driver(Protocol):
    """Drives moves through the implementation and reads its abstract state back."""

    def state(self) -> State:
        """The implementation's abstract state now, in the twin's terms."""
        ...

    def apply(self, move: Move) -> State:
        """Perform ``move`` on the implementation; its abstract state after."""
        ...


@dataclass
class CaseRun:
    """What driving a case did: the implementation's abstract state after each move."""

    case: Case
    states: list[State]


View = Callable[[State], object]
"""What of a twin state a driver shows (the comparison is on views)."""


def run_case(case: Case, driver: Driver, correct: Spec, correct_step: Step,
             view: View | None = None) -> CaseRun:
    """Drive ``case`` through ``driver``; raises :class:`ModelDivergence` where the
    implementation and :func:`expected_states` part, where a bug case's implementation takes
    the counterexample's state at the bug's move, or where a correct twin's invariant fails.

    With ``view``, the driver's state is compared with the view of each expected state (a
    driver that sees less than the twin's state, whose projection checks the invariants
    itself); without, the two are equal states and the invariants are checked here."""
    shown: View = view if view is not None else (lambda s: s)
    expected = expected_states(case, correct_step)
    seen = [driver.state()]
    if seen[0] != shown(expected[0]):
        raise ModelDivergence(_diff(correct, f"{case.id}: the initial state", expected[0],
                                    seen[0], view is None))
    for i, move in enumerate(case.moves):
        after = driver.apply(move)
        seen.append(after)
        where = f"move {i + 1} ({move}) of {case.id}"
        if (case.bug_step == i and after == shown(case.states[i + 1])
                and after != shown(expected[i + 1])):
            raise ModelDivergence(f"{where}: the implementation followed the {case.bug} "
                                  f"counterexample:\n{_show(correct, after, view is None)}")
        if after != shown(expected[i + 1]):
            raise ModelDivergence(_diff(correct, where, expected[i + 1], after, view is None))
        if view is None:
            for name, holds in correct.invariants():
                if not holds(after):
                    raise ModelDivergence(f"{where}: {name} is violated:\n"
                                          f"{correct.describe(after)}")
    return CaseRun(case, seen)


def _show(twin: Spec, state: object, is_state: bool) -> str:
    return _indent(twin.describe(state) if is_state else repr(state))


def _diff(twin: Spec, where: str, model: State, impl: object, same_kind: bool) -> str:
    return (f"{where}: the model and the implementation disagree\nmodel:\n"
            f"{_indent(twin.describe(model))}\nimplementation:\n"
            f"{_show(twin, impl, same_kind)}")


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


__all__ = ["BugReport", "Case", "CaseRun", "Coverage", "Driver", "ModelDivergence", "Move",
           "View", "bug_case", "covering_cases", "expected_states", "run_case",
           "shortest_violation"]
