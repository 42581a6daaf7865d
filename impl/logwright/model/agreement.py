"""The packed encoding answers to its readable twin, on every reachable state.

What it upholds: a packed spec (:class:`~logwright.model.packed.PackedSpec`) has two copies of
each action, the readable method (one state at a time, the reference) and its vectorized twin
(a whole array of codes at a time, the fast path the checker uses). :func:`compare_with_twin`
walks every state reachable under the spec's constraint, breadth first, invariants or not, and
holds the two copies equal there:

* ``decode(encode(s)) == s`` for every state;
* for every action, the packed successors of ``s``, in branch order, are the readable
  successors in the order the method yields them (duplicates count: they are TLC's "generated"
  states; the order decides which shortest counterexample breadth-first search reports);
* every invariant and the constraint give the same verdict on every state and every successor.

The first disagreement stops the walk and is described by action, state and the successors one
side has and the other lacks, so a change to a twin that leaves its fast path behind (or the
reverse) is caught on the first state it matters, with the state to look at. ``logwright
verify`` runs it on every shipped .cfg of each module with a packed encoding.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from logwright.model.core import State
from logwright.model.packed import Codes, PackedSpec

MAX_SHOWN = 3
"""At most this many extra and missing successors are described in a disagreement."""


@dataclass(frozen=True)
class Agreement:
    """What :func:`compare_with_twin` compared, and the first disagreement if any."""

    module: str
    states: int
    """Distinct reachable states compared (each one decoded, expanded and judged both ways)."""
    successors: int
    """Successors compared, duplicates included (TLC's "generated" less the initial states)."""
    depth: int
    """Breadth-first levels walked, the initial states being level 1."""
    seconds: float
    complete: bool
    """False when ``max_states`` stopped the walk before every reachable state was compared."""
    disagreement: str | None = None

    @property
    def agrees(self) -> bool:
        """Whether no disagreement was found (on every reachable state if ``complete``)."""
        return self.disagreement is None


def _codes(values: Sequence[int]) -> Codes:
    import numpy as np

    return np.array(values, dtype=np.int64)


def _successor_disagreement(spec: PackedSpec, s: State, action: str, readable: list[int],
                            packed: list[int]) -> str | None:
    if readable == packed:
        return None
    if sorted(readable) == sorted(packed):
        return (f"action {action} from state\n    {spec.describe(s)}\n  the same successors, "
                f"in another order: the packed branches must follow the order the twin yields "
                f"them in (breadth-first order, and so the counterexample reported, depends on "
                f"it)")
    extra = list((Counter(packed) - Counter(readable)).elements())
    missing = list((Counter(readable) - Counter(packed)).elements())

    def shown(codes: list[int]) -> str:
        lines = [f"    {spec.describe(spec.decode(c))}" for c in codes[:MAX_SHOWN]]
        more = len(codes) - MAX_SHOWN
        return "\n".join(lines + ([f"    ... and {more} more"] if more > 0 else []))

    text = [f"action {action} from state\n    {spec.describe(s)}"]
    if extra:
        text.append(f"  the packed encoding alone reaches ({len(extra)}):\n{shown(extra)}")
    if missing:
        text.append(f"  the readable twin alone reaches ({len(missing)}):\n{shown(missing)}")
    return "\n".join(text)


def _verdict_disagreement(spec: PackedSpec, states: Sequence[State], codes: Codes,
                          constraint: Callable[[State], bool]) -> str | None:
    """The first invariant or constraint on which the two copies judge a state differently."""
    for (name, holds), (packed_name, mask) in zip(spec.invariants(),
                                                   spec.packed_invariants(codes), strict=True):
        if name != packed_name:
            return f"invariant order: the twin lists {name} where the packed encoding has " \
                   f"{packed_name}"
        for s, ok in zip(states, mask.tolist(), strict=True):
            if holds(s) != ok:
                return (f"invariant {name}: the twin says {holds(s)}, the packed encoding "
                        f"{ok}, in state\n    {spec.describe(s)}")
    in_model = spec.packed_constraint(codes)
    if in_model is not None:
        for s, ok in zip(states, in_model.tolist(), strict=True):
            if constraint(s) != ok:
                return (f"constraint: the twin says {constraint(s)}, the packed encoding {ok}, "
                        f"in state\n    {spec.describe(s)}")
    return None


def compare_with_twin(spec: PackedSpec, max_states: int | None = None) -> Agreement:
    """Walk every reachable state of ``spec`` (breadth first, within its constraint, whatever
    its invariants say) and compare the packed encoding with the readable twin on each: the
    round trip of the code, every action's successors, every invariant and the constraint.

    Stops at the first disagreement, or once ``max_states`` distinct states were compared
    (``complete`` False). Raises ValueError if the spec cannot pack its states here."""
    if not spec.packed_available():
        raise ValueError(f"{spec.name} offers no packed fast path with these constants")
    started = time.perf_counter()
    actions = list(spec.actions())
    constraint = spec.constraint
    # Every state met so far and its code: a state is encoded once, however often it recurs
    # (there are about ten successors computed per distinct state).
    seen: dict[State, int] = {}
    frontier: list[State] = []
    for s in spec.init_states():
        if s not in seen and constraint(s):
            seen[s] = spec.encode(s)
            frontier.append(s)
    compared = generated = depth = 0
    limit = max_states if max_states is not None else -1

    def result(complete: bool, disagreement: str | None = None) -> Agreement:
        return Agreement(spec.name, compared, generated, depth, time.perf_counter() - started,
                         complete, disagreement)

    while frontier:
        depth += 1
        if limit >= 0 and compared + len(frontier) > limit:
            frontier = frontier[:limit - compared]
        codes = _codes([seen[s] for s in frontier])
        for s, code in zip(frontier, codes.tolist(), strict=True):
            if spec.decode(code) != s:
                return result(False, f"decode(encode(s)) is not s for state\n    "
                                     f"{spec.describe(s)}\n  it decodes to\n    "
                                     f"{spec.describe(spec.decode(code))}")
        bad = _verdict_disagreement(spec, frontier, codes, constraint)
        if bad is not None:
            return result(False, bad)
        packed: list[list[list[tuple[int, int]]]] = [[[] for _ in actions] for _ in frontier]
        for branch in spec.packed_successors(codes):
            for parent, code in zip(branch.parents.tolist(), branch.codes.tolist(), strict=True):
                packed[parent][branch.action].append((branch.branch, code))
        successors: list[State] = []
        for s, by_action in zip(frontier, packed, strict=True):
            for (name, fn), pairs in zip(actions, by_action, strict=True):
                pairs.sort(key=lambda pair: pair[0])
                theirs = [code for _, code in pairs]
                if len({b for b, _ in pairs}) != len(pairs):
                    return result(False, f"action {name} from state\n    {spec.describe(s)}\n"
                                         f"  the packed encoding gives one branch twice: "
                                         f"{[b for b, _ in pairs]}")
                ours = []
                for t in fn(s):
                    code = seen.get(t)
                    if code is None:
                        seen[t] = code = spec.encode(t)
                        successors.append(t)
                    ours.append(code)
                generated += len(ours)
                if ours != theirs:
                    bad = _successor_disagreement(spec, s, name, ours, theirs)
                    if bad is not None:
                        return result(False, bad)
        compared += len(frontier)
        if successors:  # every successor is judged, in the model or not
            bad = _verdict_disagreement(spec, successors, _codes([seen[t] for t in successors]),
                                        constraint)
            if bad is not None:
                return result(False, bad)
        if compared == limit:
            return result(not successors)
        frontier = [t for t in successors if constraint(t)]
    return result(True)


__all__ = ["Agreement", "compare_with_twin"]
