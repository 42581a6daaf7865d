"""Refinement checking: every change the implementation makes is a change its model allows.

A :class:`Refinement` names a twin (a :class:`logwright.model.Spec`) and how to enumerate the
twin's steps from an abstract state. A :class:`RefinementChecker` is given the abstract state
(the image of the running system under an abstraction function) after each event, and checks:

* the change from the last state it saw is a stutter (equal states), or a path of at most
  ``max_steps`` twin steps (a breadth-first search over the twin's actions): one event of the
  implementation may be several model steps (a leader's handling of a fetch advances its high
  watermark and expands its ISR; a produce of five records is five appends);
* every twin invariant holds on the new state.

A failure raises :class:`RefinementViolation`, naming the module, both abstract states (in the
twin's own words, ``Spec.describe``) and the invariant broken or "no step of the model leads
from before to after".

The twin's actions may range over large parameter sets (every offset); a search over all of
them would cost more than the implementation's step. :meth:`Refinement.successors` is given the
target state too, so a module may enumerate only the parameter values that can matter (the
values appearing in ``before`` and ``after``): every path it finds is still a path of genuine
twin steps, so a pass is never wrong; a module that restricts too much only risks a false alarm,
which names the two states.

A variable of the twin that the implementation keeps no value for may be *carried* rather than
abstracted (``RefinementChecker(visible=...)``): ``visible`` maps a twin state to what the
abstraction can see (the carried variables set to a constant); the search matches the target's
visible part only, and the state remembered (and checked against the invariants) is the twin
state the path reached, with the carried variables as the twin's own steps set them. Any path
that matches is a genuine behaviour of the twin, so the later steps are held to the guards that
read the carried variables.

The cluster projections check after every event of the simulated world, and almost every event
changes nothing they abstract. Each one (LogStartOffset, ControllerFencing, StrayCleanup)
therefore first reads its *inputs* for a partition: every value of the cluster its check reads
(records of the store, a log's offsets, a broker's epochs, by identity where the check compares
objects), with what it keeps that changes from outside (a DeleteRecords answer, the requests
recorded). A check that changed nothing the projection keeps (:func:`snapshot` before and
after), moved no counter and read no file is *quiet*; a later check with the same inputs would
retrace it and be quiet again, so it is not made (StrayCleanup, whose state holds the time:
the state last checked takes the time, the twin's Ticks, as the check would). The shortcut is
exact, not a sample: ``cross_check`` makes every check in full and asserts that each one it
would have skipped is quiet again (tests/test_refinement_quiet_checks.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Protocol

from logwright.conformance.violation import RefinementViolation as RefinementViolation
from logwright.model.core import Spec, State

if TYPE_CHECKING:
    from logwright.cluster import Cluster

class ClusterObserver:
    """What the cluster projections share: attached to a simulated cluster's world, they
    ``check`` after every ``every``-th event it executes (and when a test calls ``check``)."""

    cluster: Cluster
    events: int = 0
    every: int = 1
    #: Check every partition in full even where its inputs are those of its last quiet check,
    #: and assert that such a check is quiet again (tests): the shortcut that skips them
    #: checks exactly what a full check does. ``cross_checks`` counts the checks so compared.
    cross_check: bool = False
    cross_checks: int = 0

    def attach(self) -> None:
        """Check after every event of the cluster's simulated world from now on."""
        self.cluster.simulated_world.observe(self.on_event)

    def on_event(self) -> None:
        """The world's observer: check every ``every``-th event."""
        self.events += 1
        if self.events % self.every == 0:
            self.check("after a simulated event")

    def check(self, context: str = "") -> None:
        """Abstract the cluster and check the twin; raises RefinementViolation."""
        raise NotImplementedError


_ATOMS = frozenset({int, str, bool, float, bytes, type(None)})


class Identity:
    """``obj``, for :func:`snapshot` to compare by identity (a value the projection tells
    apart with ``is``)."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj


def snapshot(value: object) -> object:
    """A frozen copy of ``value``, for telling whether a check changed what a projection keeps.

    Numbers, strings, bytes and None are kept as they are; tuples (named ones too), lists, dicts
    (in their order), sets and frozen dataclasses element by element, compared by value as the
    projections compare them; a dataclass that is not frozen by its identity and its fields;
    any other object (a log, a broker, a checker, an enum member) by its identity, the object
    held so that the identity is not reused while the snapshot lives. Two snapshots are equal
    only if nothing the projection could tell apart changed."""
    t = type(value)
    if t in _ATOMS:
        return value
    if isinstance(value, Identity):
        return (Identity, id(value.obj), value.obj)
    if isinstance(value, tuple):
        for v in value:
            if type(v) not in _ATOMS:
                return (t, tuple(map(snapshot, value)))
        return value
    if isinstance(value, list):
        return (t, tuple(map(snapshot, value)))
    if isinstance(value, dict):
        return (t, tuple((snapshot(k), snapshot(v)) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        return (t, frozenset(map(snapshot, value)))
    if t not in _FIELDS:
        params = getattr(t, "__dataclass_params__", None)
        _FIELDS[t] = (None if params is None else
                      (bool(params.frozen),
                       tuple(f.name for f in fields(value))))  # type: ignore[arg-type]
    shape = _FIELDS[t]
    if shape is not None:
        parts = tuple(snapshot(getattr(value, name)) for name in shape[1])
        return (t, parts) if shape[0] else (t, id(value), value, parts)
    return (t, id(value), value)


_FIELDS: dict[type, tuple[bool, tuple[str, ...]] | None] = {}
"""Per dataclass: whether it is frozen, and its fields' names; None for any other type."""


DEFAULT_MAX_STEPS = 3
"""How many twin steps one observed change may take (K)."""

NO_STEP = "no step of the model leads from before to after"
"""The reason given when the search finds no path."""


def _same(state: State) -> State:
    return state


class Refinement(Protocol):
    """What a module's refinement provides: the twin, and the twin's steps from a state."""

    @property
    def spec(self) -> Spec:
        """The twin the implementation refines."""
        ...

    def successors(self, state: State, target: State) -> Iterable[tuple[str, State]]:
        """Every (action label, successor) of ``state`` the search should try on its way to
        ``target``; each must be a genuine twin step."""
        ...


@dataclass(frozen=True)
class StepFound:
    """How an observed change was matched: the twin's action labels, in order (empty: a
    stutter), and the twin states the path went through (``states[-1]`` is the target)."""

    actions: tuple[str, ...]
    states: tuple[State, ...] = ()


class RefinementChecker:
    """Checks a sequence of abstract states against a twin, one observed change at a time.

    ``check(after)`` compares ``after`` with the last state checked (the first call only checks
    the invariants, unless ``initial`` is given, which must then be a twin initial state). The
    counters (``checks``, ``stutters``, ``steps_by_length``) say how much was checked.
    """

    def __init__(self, refinement: Refinement, *, max_steps: int = DEFAULT_MAX_STEPS,
                 initial: State | None = None,
                 visible: Callable[[State], State] | None = None) -> None:
        assert max_steps >= 1, "at least one twin step per observed change"
        self.refinement = refinement
        self.visible: Callable[[State], State] = visible if visible is not None else _same
        self.spec = refinement.spec
        self.max_steps = max_steps
        self.last: State | None = None
        self.checks = 0
        self.stutters = 0
        self.steps_by_length: dict[int, int] = {}
        if initial is not None:
            if initial not in set(self.spec.init_states()):
                raise RefinementViolation(self.spec.name, "not an initial state of the model",
                                          "(none)", self.spec.describe(initial))
            self.check_invariants(initial)
            self.last = initial

    def check_invariants(self, state: State, before: State | None = None,
                         context: str = "") -> None:
        """Every twin invariant on ``state``; raises RefinementViolation naming the first
        violated."""
        for name, holds in self.spec.invariants():
            if not holds(state):
                raise RefinementViolation(
                    self.spec.name, f"invariant {name} is violated",
                    self.spec.describe(before) if before is not None else "(none)",
                    self.spec.describe(state), context)

    def find_path(self, before: State, after: State) -> StepFound | None:
        """The shortest path of at most ``max_steps`` twin steps from ``before`` to ``after``
        (an empty one if equal), or None."""
        goal = self.visible(after)
        if self.visible(before) == goal:
            return StepFound(())
        seen = {before}
        frontier: deque[tuple[State, tuple[str, ...], tuple[State, ...]]] = deque(
            [(before, (), ())])
        while frontier:
            state, path, states = frontier.popleft()
            for label, nxt in self.refinement.successors(state, after):
                if self.visible(nxt) == goal:
                    return StepFound((*path, label), (*states, nxt))
                if len(path) + 1 < self.max_steps and nxt not in seen:
                    seen.add(nxt)
                    frontier.append((nxt, (*path, label), (*states, nxt)))
        return None

    def check_step(self, before: State, after: State, context: str = "") -> StepFound:
        """``after`` is ``before`` or reachable from it in at most ``max_steps`` twin steps, and
        every invariant holds on the state reached (``after``, with any carried variables as the
        path set them: ``reached``); raises RefinementViolation otherwise."""
        self.checks += 1
        found = self.find_path(before, after)
        if found is None:
            raise RefinementViolation(self.spec.name, NO_STEP, self.spec.describe(before),
                                      self.spec.describe(after), context)
        if found.actions:
            n = len(found.actions)
            self.steps_by_length[n] = self.steps_by_length.get(n, 0) + 1
        else:
            self.stutters += 1
        self.check_invariants(self.reached(before, found), before, context)
        return found

    @staticmethod
    def reached(before: State, found: StepFound) -> State:
        """The twin state a matched change ends in: the path's last (``before`` for a
        stutter)."""
        return found.states[-1] if found.actions else before

    def check(self, after: State, context: str = "") -> StepFound:
        """Check the change from the last state seen to ``after``, then remember ``after``."""
        if self.last is None:
            self.checks += 1
            self.check_invariants(after, None, context)
            self.last = after
            return StepFound(())
        found = self.check_step(self.last, after, context)
        self.last = self.reached(self.last, found)
        return found

    def rebase(self, state: State, context: str = "") -> None:
        """Start a new behaviour at ``state`` (a change the module's projection declares
        outside the model, e.g. a fault the model's fault model excludes): its invariants are
        checked, the step is not."""
        self.checks += 1
        self.check_invariants(state, self.last, context)
        self.last = state


def labels(found: Sequence[StepFound]) -> list[str]:
    """The action labels of several matched changes, flattened (for tests and reports)."""
    return [label for f in found for label in f.actions]
