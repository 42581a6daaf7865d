"""ReplicaMoves: two partitions moving at once between the same two dirs of one broker, each a
ReplicaMove, sharing the broker's life, its dirs, a dir's fsync and one copier
(spec/ReplicaMoves.tla, its twin logwright.model.replica_move.moves)."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest

from logwright.model import check
from logwright.model.replica_move import FUT, LIVE, SRC, ReplicaMoveConfig
from logwright.model.replica_move.moves import ReplicaMovesTwin, RMPair
from logwright.verify.formal import tlc_figures
from logwright.verify.tlc import find_tools, run_tlc

SPEC = Path(__file__).resolve().parents[1] / "spec"
CFG = SPEC / "ReplicaMoves.cfg"


def reachable(spec: ReplicaMovesTwin) -> list[tuple[RMPair, str, RMPair]]:
    """Every step (state, action, next) of the reachable graph."""
    init = [s for s in spec.init_states() if isinstance(s, RMPair)]
    seen, queue, steps = set(init), deque(init), []
    while queue:
        s = queue.popleft()
        for name, fn in spec.actions():
            for t in fn(s):
                assert isinstance(t, RMPair)
                steps.append((s, name, t))
                if t not in seen:
                    seen.add(t)
                    queue.append(t)
    return steps


def test_two_moves_hold_with_tlc_s_figures() -> None:
    spec = ReplicaMovesTwin.from_cfg(CFG)
    assert spec.config == ReplicaMoveConfig(max_records=1)
    result = check(spec)
    want = tlc_figures()["ReplicaMoves.cfg"]
    assert result.holds and result.complete
    assert (result.distinct, result.generated, result.depth) == (
        want["distinct"], want["generated"], want["depth"])


def test_the_composition_is_exercised() -> None:
    """The shared parts are met: one dir fsync making both partitions' renames durable, one
    dir failure under both moves, both partitions swapped, and p2 copying only after p1."""
    steps = reachable(ReplicaMovesTwin.from_cfg(CFG))
    both_durable = [
        (s, t) for s, name, t in steps if name == "FsyncDir"
        and s.p1.durName != t.p1.durName and s.p2.durName != t.p2.durName]
    assert both_durable
    assert any(name == "FailDir" and t.p1.offline[1] and t.p2.offline[1] and s.p1.locked
               for s, name, t in steps)
    done = [t for _, _, t in steps if t.p1.current == FUT and t.p2.current == FUT]
    assert done and all(t.p1.durName[1] == LIVE and t.p2.durName[1] == LIVE for t in done)
    for s, name, t in steps:
        if name == "Own2" and t.p2.vol[1] > s.p2.vol[1] and s.p2.current == SRC:  # p2's copy
            assert ReplicaMovesTwin.p1_copy_done(s)


@pytest.mark.parametrize("bug", ["SwapBeforeFlush", "NoRestampOnOfflineDir"])
def test_a_bug_of_one_move_is_caught_with_two(bug: str) -> None:
    spec = ReplicaMovesTwin(ReplicaMoveConfig(max_records=1, bug=bug))
    violation = check(spec).violation
    assert violation is not None and violation.invariant == "AtomicMoveSwap"
    last = violation.steps[-1][1]
    assert isinstance(last, RMPair) and not (spec.one.AtomicMoveSwap(last.p1)
                                             and spec.one.AtomicMoveSwap(last.p2))


def test_the_copier_order_does_not_matter_for_safety() -> None:
    """Two copies at once (no alphabetical order) are as safe: the order is for bandwidth."""

    class BothCopy(ReplicaMovesTwin):
        @staticmethod
        def p1_copy_done(s: RMPair) -> bool:
            return True

    result = check(BothCopy(ReplicaMoveConfig(max_records=1)))
    assert result.holds and result.distinct > tlc_figures()["ReplicaMoves.cfg"]["distinct"]


@pytest.mark.skipif(find_tools() is None, reason="TLC not installed (set TLA2TOOLS_JAR)")
def test_tlc_agrees() -> None:
    result = run_tlc(SPEC / "ReplicaMoves.tla", CFG)
    assert result.ok and result.violation is None, result.error
    want = tlc_figures()["ReplicaMoves.cfg"]
    assert (result.distinct, result.depth) == (want["distinct"], want["depth"])


