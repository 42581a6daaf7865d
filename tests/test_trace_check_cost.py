"""What keeps ``traces check`` cheap per event leaves its verdicts as they were."""

from __future__ import annotations

import gc
import json
import marshal
import random
import weakref
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from logwright.model.controller_fencing import ControllerFencingConfig, ControllerFencingTwin
from logwright.model.core import InvariantPart, Spec, State
from logwright.model.fetcher_failure import FetcherFailureConfig, FetcherFailureTwin, FFState
from logwright.model.log_start_offset import LogStartOffsetConfig, LogStartOffsetTwin
from logwright.verify import traces
from logwright.verify.traces import CheckReport, check_paths

TRACES = Path(__file__).resolve().parent.parent / "traces"
REFUSED = Path(__file__).resolve().parent / "data" / "refused"
"""A trace the checker refuses (traces/checker/0013 with its proposal moved after the leader's
LeaderAndIsr of the new epoch): the failure paths run too."""


def test_a_check_leaves_no_reference_cycle_behind() -> None:
    """The check runs with the cyclic collector paused: a cycle made during it (an exception
    kept in a local, a function that calls itself through its closure) would hold the frames
    above it, and every event they see, until a later full collection. traces/checker/ has the
    refused restarts and the restarts outside the model that once made such cycles."""
    check_paths([TRACES, REFUSED])  # imports and caches first
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        report = check_paths([TRACES, REFUSED], CheckReport(track_states=True))
        del report
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()


def test_the_collector_is_on_again_after_a_check() -> None:
    assert gc.isenabled()
    check_paths([TRACES / "corpus"])
    assert gc.isenabled()


# ---- invariants asked only after a step that changed what they read ---------------------------

def _reachable(spec: Spec, limit: int) -> list[State]:
    """Up to ``limit`` states of ``spec`` in breadth-first order from its initial states (the
    states of a buggy twin include some that violate an invariant)."""
    seen: dict[State, None] = dict.fromkeys(spec.init_states())
    queue = deque(seen)
    while queue and len(seen) < limit:
        s = queue.popleft()
        for action in spec.actions():
            for t in action.fn(s):
                if t not in seen and len(seen) < limit:
                    seen[t] = None
                    queue.append(t)
    return list(seen)


def _declared(spec: Spec) -> list[tuple[str, frozenset[str], Callable[[Any], bool]]]:
    """(invariant, the variables it or its part reads, it or its part) for every invariant
    and part ``spec`` declares what it reads."""
    reads, parts = spec.invariant_reads(), spec.invariant_parts()
    return ([(name, reads[name], holds) for name, holds in spec.invariants() if name in reads]
            + [(name, r, part) for name in parts for r, part in parts[name]])


def _undeclared_dependence(declared: list[tuple[str, frozenset[str], Callable[[Any], bool]]],
                           states: list[State], pairs: int = 4000) -> list[str]:
    """Each invariant or part ``declared``, asked of a state ``s`` and of ``s`` with every
    variable it does not declare taken from another state ``t``: where the two differ, it
    reads a variable the declaration leaves out."""
    rng = random.Random(7)
    wrong = []
    for name, reads, holds in declared:
        for _ in range(pairs):
            s, t = rng.choice(states), rng.choice(states)
            assert isinstance(s, tuple) and isinstance(t, tuple)
            fields = type(s)._fields  # type: ignore[attr-defined]
            mixed = type(s)(*(a if f in reads else b for f, a, b in zip(fields, s, t,
                                                                          strict=True)))
            if holds(mixed) != holds(s):
                wrong.append(f"{name} ({sorted(reads)}): {s} and {mixed}")
                break
    return wrong


TWINS: list[Spec] = [
    *(LogStartOffsetTwin(LogStartOffsetConfig((1, 2, 3), 1, 2, 1, bug))
      for bug in ("none", "RetentionIgnoresHW", "FollowerRaisesStartBeforeHW", "HWIgnoresIsr",
                  "AckBeforeDurable", "StartOffsetCheckpointLazy")),
    *(ControllerFencingTwin(ControllerFencingConfig((1, 2), bug=bug))
      for bug in ("none", "NoControllerEpochCheck", "NoBrokerEpochCheck",
                  "UnconditionalStoreWrite", "NoControllerEpochRecorded")),
    *(FetcherFailureTwin(FetcherFailureConfig(3, 2, 2, bug))
      for bug in ("none", "FailWholeFetcher", "FenceWithStaleEpochFails", "NoUnfailOnNewEpoch")),
]


@pytest.mark.parametrize("twin", TWINS, ids=lambda t: f"{t.name}-{t.config.bug}")
def test_an_invariant_reads_only_the_variables_its_twin_declares(twin: Spec) -> None:
    """Over reachable states (violating ones too, from the buggy twins), an invariant's value
    does not change when only variables outside its declaration do."""
    states = _reachable(twin, 3000)
    assert len(states) > 300
    declared = _declared(twin)
    assert {name for name, _ in twin.invariants()} == {name for name, _, _ in declared}
    assert _undeclared_dependence(declared, states) == []


@pytest.mark.parametrize("twin", [TWINS[0], TWINS[6], TWINS[11]], ids=lambda t: t.name)
def test_an_invariant_made_of_parts_is_their_conjunction(twin: Spec) -> None:
    """On reachable states, and on states with one variable taken from a state of another
    twin's bounds or set to a value of another type, TypeOK is the conjunction of its parts."""
    parts = twin.invariant_parts()["TypeOK"]
    types = dict(twin.invariants())["TypeOK"]
    states = _reachable(twin, 1000)
    rng = random.Random(3)
    odd: list[Any] = [-2, 99, True, 0.5, "x", (), frozenset(), (1, 2, 3, 4, 5), (-5,), ("x",)]
    for s in states:
        assert isinstance(s, tuple)
        i = rng.randrange(len(s))
        for value in (rng.choice(odd), rng.choice(states)[i]):  # type: ignore[index]
            t = type(s)(*s[:i], value, *s[i + 1:])
            try:
                verdict = types(t)
            except (TypeError, AttributeError) as exc:  # a value TypeOK cannot even read
                with pytest.raises(type(exc)):
                    all(part(t) for _, part in parts)
                continue
            assert verdict == all(part(t) for _, part in parts), t


def test_a_declaration_that_leaves_a_variable_out_is_found() -> None:
    twin = LogStartOffsetTwin(LogStartOffsetConfig((1, 2, 3), 1, 2, 1, "HWIgnoresIsr"))
    wrong = [(name, reads - {"isr"}, holds) for name, reads, holds in _declared(twin)
             if name == "CommittedDataOnIsr"]
    assert wrong and _undeclared_dependence(wrong, _reachable(twin, 3000))


def _checked(ask_every: bool, *paths: Path) -> str:
    report = check_paths(paths, CheckReport(track_states=True, ask_every_invariant=ask_every))
    report.settle_states()
    report.seconds = 0.0
    return repr((report, sorted(report.states)))


def test_asking_every_invariant_after_every_step_changes_no_finding() -> None:
    """The cross-check: every invariant asked after every step, and one left unasked by the
    declarations must hold (else AssertionError); the report is the same as without it."""
    assert _checked(True, TRACES, REFUSED) == _checked(False, TRACES, REFUSED)


class _HidesTypeOk(LogStartOffsetTwin):
    """LogStartOffset declaring that TypeOK reads ``leo`` alone."""

    def invariant_parts(self) -> Mapping[str, Sequence[InvariantPart]]:
        return {"TypeOK": [(frozenset({"leo"}), part) for _, part in self._type_ok_parts]}


def test_the_cross_check_finds_an_invariant_left_unasked_that_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A declaration that leaves out a variable a violation changes: the violation goes
    unreported, and the cross-check says so."""
    events = [json.loads(line) for line in
              (TRACES / "corpus" / "retention-and-restart.jsonl").read_text().splitlines()]
    # Last, a step outside the model whose recorded values become the state: the leader
    # outside its own ISR, which TypeOK refuses.
    events.append({**events[-1], "seq": len(events), "model": "LogStartOffset",
                   "instance": "r-0", "action": "Truncate", "args": {"replica": 2},
                   "changed": {"isr": []}, "node": "broker-2"})
    path = tmp_path / "tampered.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    failures = check_paths([path]).failures
    assert [(f.action, f.message) for f in failures] == [
        ("Truncate", "TypeOK is violated after this step")]
    monkeypatch.setattr(traces, "_PLANS", weakref.WeakKeyDictionary())
    # The checker's twins made by a subclass with the wrong declaration (a subclass, not the
    # class patched: the compiled build's twins call their own methods natively).
    twin = traces._lso_twin
    monkeypatch.setattr(traces, "_lso_twin", lambda *a: _HidesTypeOk(twin(*a).config))
    assert check_paths([path]).ok, "TypeOK was not asked: the declaration hid the violation"
    with pytest.raises(AssertionError, match="TypeOK of LogStartOffset is violated"):
        check_paths([path], CheckReport(ask_every_invariant=True))


def test_one_value_is_one_type_too() -> None:
    """A field counts as unchanged only when it is the same value of the same types: else its
    invariants are asked again."""
    same = traces._same_value
    assert same((1, 2), tuple([1, 2])) and same(7, int("7")) and same("a", "a")
    assert same((2**70, 1), (2**70, 1)) and same(None, None)
    assert not same(1, True) and not same((1, 0), (True, 0)) and not same((1,), [1])
    assert not same(0.0, -0.0) and not same((float("0"),), (float("0"),))  # floats: never
    assert not same(frozenset({1}), frozenset({1}))  # other values: only the same object
    assert not same((tuple([1]),), (tuple([1]),)) and not same((1, 2), (1, 3))


def test_a_state_is_remembered_by_its_exact_form() -> None:
    """Fingerprints are remembered by a form two states share only when they are the same
    values of the same types (a named tuple inside: its repr)."""
    exact = traces._exact
    assert marshal.loads(exact(("a", (1, True), frozenset({2})))) == ("a", (1, True), {2})
    assert exact((1,)) != exact((True,)) != exact((1.0,))
    assert exact((0.0,)) != exact((-0.0,)) and exact(((1,),)) != exact(([1],))
    request = traces.Request("LeaderAndIsr", 1, 1, 1, 0)
    assert exact((1, frozenset({request}))) == repr((1, frozenset({request})))


def test_a_move_checked_again_takes_its_paths_as_searched(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A move's event met again is not searched again (the paths are remembered by the exact
    states), and its findings are those of the search."""
    monkeypatch.setattr(traces, "_RM_PATHS", {})
    moves = TRACES / "corpus" / "jbod-moves.jsonl"
    first = _checked(False, moves)
    assert traces._RM_PATHS
    # A search adds its path: the paths the first check remembered are all the second one
    # has (the module's dict, not the checker's method, watched: the compiled build calls
    # find_path natively).
    remembered = dict(traces._RM_PATHS)
    monkeypatch.setattr(traces, "_RM_PATHS", dict(remembered))
    assert _checked(False, moves) == first
    assert remembered == traces._RM_PATHS, "a move's event was searched again"


class _Forgets(dict[Any, Any]):
    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def test_a_fetch_ok_met_again_on_its_state_is_the_same_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A FetchOk that recorded no change, met again on the state it left as it was (same
    partition, same epoch), is that step again without the twin's FetchRequest and FetchOk:
    the same report as when every one is stepped through the twin."""
    paths = [TRACES / "corpus", REFUSED]
    sent: list[int] = []
    forget = False

    # The checker's twins made by a subclass that counts the fetches sent, and makes the
    # instance it serves forget its FetchOk steps when ``forget`` (a subclass, not the class
    # and the instance's __init__ patched: the compiled build calls those natively).
    class Counting(FetcherFailureTwin):
        forgetful = False

        def FetchRequest(self, s: State, p: int) -> FFState | None:
            sent.append(p)
            if forget and not self.forgetful:  # its first fetch: before any step remembered
                self.forgetful = True
                holders = [o for o in gc.get_referrers(self)
                           if isinstance(o, traces._FfInstance) and o.twin_ is self]
                assert len(holders) == 1
                holders[0].fetched = _Forgets()
            return super().FetchRequest(s, p)

    twin = traces._ff_twin
    monkeypatch.setattr(traces, "_ff_twin", lambda *a: Counting(twin(*a).config))
    remembered = _checked(False, *paths)
    asked = len(sent)
    forget = True
    sent.clear()
    assert _checked(False, *paths) == remembered
    assert len(sent) > asked > 0
