"""The vocabulary of the executable reference model: specs, actions, states and results.

A :class:`Spec` is the Python twin of one TLA+ module. It upholds nothing by itself: it states
the initial states, the actions (one per TLA+ action operator, same name), the invariants (same
names as in TLA+ and Z3) and the state constraint that bounds the model, and the checker in
:mod:`logwright.model.checker` explores it the way TLC explores the module.

States are canonical hashable values (tuples, frozensets, ints, strings, booleans), so that two
states that are equal as TLA+ values are equal and hash equal in Python; the distinct-state count
then means the same thing in both tools.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from mypy_extensions import mypyc_attr

State = Hashable
"""One state of a spec: canonical, immutable, hashable (tuples / frozensets / ints / strings)."""

Successors = Callable[[State], Iterable[State]]
"""An action applied to a state: every successor state it can produce (none when disabled)."""

Invariant = tuple[str, Callable[[State], bool]]
"""A named state predicate that must hold in every reachable state."""

InvariantPart = tuple[frozenset[str], Callable[[Any], bool]]
"""One conjunct of an invariant, with the state variables (field names) it reads."""

INITIAL = "Initial predicate"
"""The step label of a trace's first state, as TLC prints it."""


class Action(NamedTuple):
    """One TLA+ action: its operator name and its successor function.

    A plain ``(name, fn)`` tuple is accepted wherever an Action is, and an Action unpacks as one.
    """

    name: str
    fn: Successors


# Subclassed by Python classes the compiled build leaves as Python (the packed specs, the
# tests' twins): mypyc (the compiled build) refuses those without this; a no-op in Python.
@mypyc_attr(allow_interpreted_subclasses=True)
class Spec(ABC):
    """The Python twin of one TLA+ module, as the checker sees it.

    Subclasses set :attr:`name` to the TLA+ module name and implement the three abstract methods.
    The API is deliberately small (initial states, actions, invariants, constraint) because later
    issues use the same object as the oracle the broker is tested against.
    """

    name: str = ""
    """The TLA+ module name, e.g. ``"LogStartOffset"``."""

    @abstractmethod
    def init_states(self) -> Iterable[State]:
        """Every state satisfying the TLA+ ``Init`` predicate."""

    @abstractmethod
    def actions(self) -> Sequence[Action]:
        """The disjuncts of ``Next``, one per TLA+ action operator, in the module's order."""

    @abstractmethod
    def invariants(self) -> Sequence[Invariant]:
        """The invariants the .cfg lists, in the .cfg's order (TLC reports the first violated)."""

    def invariant_reads(self) -> Mapping[str, frozenset[str]]:
        """Per invariant name, the state variables (field names) its value depends on, besides
        the spec's constants: a checker of one behaviour may leave an invariant that held
        unasked after a step that changed none of them (``traces check`` does). An invariant
        not named reads every variable (the default: none named)."""
        return {}

    def invariant_parts(self) -> Mapping[str, Sequence[InvariantPart]]:
        """Per invariant name, conjuncts whose conjunction the invariant is, each with the
        variables it reads: a checker of one behaviour may then ask only the parts that read a
        variable a step changed (a TypeOK, one part per variable). None named by default."""
        return {}

    _type_ok_parts_kept: list[InvariantPart] | None = None

    @property
    def _type_ok_parts(self) -> list[InvariantPart]:
        """:meth:`_make_type_ok_parts`, made on first use and kept (a twin whose TypeOK is a
        conjunction of parts, one per variable, reads them through this)."""
        kept = self._type_ok_parts_kept
        if kept is None:
            kept = self._type_ok_parts_kept = self._make_type_ok_parts()
        return kept

    def _make_type_ok_parts(self) -> list[InvariantPart]:
        """The parts of the twin's TypeOK (none by default)."""
        return []

    def constraint(self, s: State) -> bool:
        """The TLA+ ``CONSTRAINT``: states outside it are checked, not counted, not expanded."""
        return True

    def describe(self, s: State) -> str:
        """A readable one-state rendering for traces; override for something better than repr."""
        return repr(s)


@dataclass
class Counterexample:
    """The shortest behaviour that ends in a state violating ``invariant``.

    ``steps[0]`` is ``(INITIAL, initial_state)``; every later step is the action taken and the
    state it produced. ``len(steps)`` is the trace length TLC reports (states, not transitions).
    """

    invariant: str
    steps: list[tuple[str, State]]

    def __len__(self) -> int:
        return len(self.steps)

    def format(self, spec: Spec | None = None) -> str:
        """The trace as TLC-like numbered states, rendered by ``spec.describe`` when given."""
        lines = [f"Invariant {self.invariant} is violated after {len(self.steps)} states:"]
        for i, (action, state) in enumerate(self.steps, start=1):
            label = f"<{action}>" if action == INITIAL else action
            body = spec.describe(state) if spec is not None else repr(state)
            lines.append(f"State {i}: {label}")
            lines.extend("  " + part for part in body.splitlines())
        return "\n".join(lines)


@dataclass(frozen=True)
class SearchProgress:
    """Where a search stands after a level (or a batch of states): what TLC's progress lines
    report."""

    depth: int
    """The BFS level just finished (initial states: 1)."""
    generated: int
    distinct: int
    queued: int
    """States found and not yet expanded."""
    seconds: float


ProgressFn = Callable[[SearchProgress], None]
"""What a checker calls with its progress; it must not change the search."""


@dataclass
class CheckResult:
    """TLC-like statistics of one exhaustive exploration, and its violation if one was found.

    ``generated`` counts every state computed (initial states and every successor, duplicates and
    states outside the constraint included), ``distinct`` the distinct states within the
    constraint, and ``depth`` the largest BFS level, the initial states being level 1: the same
    three figures TLC prints at the end of a run.
    """

    spec: str
    generated: int
    distinct: int
    depth: int
    seconds: float
    violation: Counterexample | None = None
    complete: bool = True
    """False when ``max_states`` stopped the search before the state space was exhausted."""
    engine: str = "generic"
    """Which exploration ran: ``"generic"`` (one state at a time) or ``"packed"`` (batched)."""
    left_on_queue: int = 0

    @property
    def states_per_second(self) -> float:
        """Distinct states found per second of search, TLC's throughput figure."""
        return self.distinct / self.seconds if self.seconds > 0 else float(self.distinct)

    @property
    def holds(self) -> bool:
        """Whether the search was complete and found no violation."""
        return self.complete and self.violation is None

    def tlc_report(self, spec: Spec | None = None) -> str:
        """The end of a TLC run, in TLC's words: the verdict (with the behaviour, each state
        rendered by ``spec.describe`` when given, for a violation), the counts and the depth.
        Times are left out, so the same search always reads the same."""
        lines: list[str] = []
        if self.violation is not None:
            lines.append(f"Error: Invariant {self.violation.invariant} is violated.")
            lines.append("Error: The behavior up to this point is:")
            for i, (action, state) in enumerate(self.violation.steps, start=1):
                label = "<Initial predicate>" if action == INITIAL else f"<{action}>"
                lines.append(f"State {i}: {label}")
                body = spec.describe(state) if spec is not None else repr(state)
                lines.extend(body.splitlines())
                lines.append("")
        elif self.complete:
            lines.append("Model checking completed. No error has been found.")
        else:
            lines.append(f"Search stopped after {self.distinct:,} distinct states, before the "
                         "state space was exhausted: no error found so far.")
        lines.append(f"{self.generated} states generated, {self.distinct} distinct states "
                     f"found, {self.left_on_queue} states left on queue.")
        lines.append(f"The depth of the complete state graph search is {self.depth}.")
        return "\n".join(lines)

    def summary(self) -> str:
        """One line: the figures TLC prints, plus the rate."""
        verdict = ("no violation" if self.violation is None
                   else f"{self.violation.invariant} violated ({len(self.violation)} states)")
        return (f"{self.spec}: {self.generated:,} generated, {self.distinct:,} distinct, depth "
                f"{self.depth}, {self.seconds:.2f}s ({self.states_per_second:,.0f} distinct/s, "
                f"{self.engine}): {verdict}")


@dataclass
class ProofResult:
    """The outcome of one unbounded proof (or refutation) of one invariant by Z3."""

    invariant: str
    method: str
    holds: bool
    seconds: float
    detail: str = ""
    counterexample: list[str] | None = field(default=None)
    undecided: bool = False
    """z3 could not decide within its resource limit (``holds`` is then False, with no
    counterexample): neither a proof nor a violation."""
