"""ReplicaMove: the Python twin is TLC's machine, every bug is caught, Z3 proves the rest.

The equality with TLC's figures on every .cfg is tests/test_model_conformance.py; this file
checks the module's own protocol, its fast path and its Z3 encoding.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from types import ModuleType

import pytest

from logwright.model import SPECS, check
from logwright.model.replica_move import (
    BUGS,
    DELETE,
    EXPECTED_VIOLATION,
    FUT,
    FUTURE,
    LIVE,
    SRC,
    Authoritative,
    ReplicaMoveConfig,
    ReplicaMoveSpec,
    RMState,
)
from logwright.verify.formal import load_z3_module

SPEC = Path(__file__).resolve().parents[1] / "spec"
BUG_CFGS = [f"ReplicaMove_bug_{bug}.cfg" for bug in BUGS]


def load_z3() -> ModuleType:
    module = load_z3_module("ReplicaMove", SPEC)
    assert module is not None
    return module


def spec_of(cfg: str) -> ReplicaMoveSpec:
    return ReplicaMoveSpec.from_cfg(SPEC / cfg)


def reachable(spec: ReplicaMoveSpec) -> set[RMState]:
    init = [s for s in spec.init_states() if isinstance(s, RMState)]
    seen, queue = set(init), deque(init)
    while queue:
        s = queue.popleft()
        for _name, fn in spec.actions():
            for t in fn(s):
                assert isinstance(t, RMState)
                if t not in seen:
                    seen.add(t)
                    queue.append(t)
    return seen


HEALTHY = {"offline": (False, False), "newer": FUT, "starting": False}
"""The fields of a state with both dirs online, the future log the newer generation, running."""


def restart(spec: ReplicaMoveSpec, s: RMState) -> RMState:
    """A crash in ``s`` and the whole start-up after it: Recover, the fsync of each dir
    recovery renamed in, and Serve."""
    crashed = spec.Crash(s) if s.up else s
    assert crashed is not None
    t = spec.Recover(crashed)
    assert t is not None
    for log in (SRC, FUT):
        t = spec.FsyncDir(t, log) or t
    served = spec.Serve(t)
    assert served is not None, spec.describe(t)
    return served


def test_registered_and_reads_the_cfg_tlc_reads() -> None:
    assert SPECS["ReplicaMove"] is ReplicaMoveSpec
    assert ReplicaMoveConfig.from_cfg(SPEC / "ReplicaMove.cfg") == ReplicaMoveConfig(
        max_records=3, bug="none", invariants=("TypeOK", "AtomicMoveSwap"))
    for cfg in BUG_CFGS:
        assert spec_of(cfg).config.bug == cfg.removesuffix(".cfg").split("_bug_")[1]


def test_counterexample_reads_as_the_story_of_the_bug() -> None:
    spec = spec_of("ReplicaMove_bug_SwapBeforeFlush.cfg")
    violation = check(spec).violation
    assert violation is not None
    text = violation.format(spec)
    assert text.startswith("Invariant AtomicMoveSwap is violated after 8 states:")
    assert [action for action, _ in violation.steps] == [
        "Initial predicate", "Append", "Flush", "Copy", "BeginSwap", "RenameFutureLive",
        "FsyncDir", "AdvanceHW"]
    assert text.splitlines()[-3:] == [
        "  broker up, append lock held; appends go to src; acked=1; authoritative on disk: fut; "
        "in common: 1",
        "  src in D1: name=live (on disk live), records=1 (fsynced 1)",
        "  fut in D2: name=live (on disk live), records=1 (fsynced 0)"]


# -- the packed fast path: the same machine as the Python actions ----------------------------------

# The vectorized successors, invariants and codes against the Python actions on every reachable
# state, action by action and in order: tests/test_model_agreement.py for every bug on a small
# model, logwright verify --suite agreement on every shipped .cfg.

def test_both_engines_explore_the_same_larger_model() -> None:
    # 64,140 states (max_records 8 has 230,076, and the engines agree there too, in four
    # times the time, which make test's ten minutes could no longer afford)
    spec = ReplicaMoveSpec(ReplicaMoveConfig(max_records=6))
    generic, packed = check(spec, packed=False), check(spec, packed=True)
    assert packed.engine == "packed" and packed.holds and generic.holds
    assert (packed.generated, packed.distinct, packed.depth) == (
        generic.generated, generic.distinct, generic.depth)
    assert generic.distinct == len(reachable(spec)) > 1000


def test_a_model_too_large_for_one_int64_code_falls_back_to_the_generic_engine() -> None:
    spec = ReplicaMoveSpec(ReplicaMoveConfig(max_records=10**4))
    assert not spec.packed_available()
    result = check(spec, max_states=100)
    assert result.engine == "generic" and not result.complete and result.distinct == 100
    with pytest.raises(ValueError, match="no packed fast path"):
        check(spec, packed=True)


# -- the protocol: every crash point recovers, by itself, with nothing lost -------------------

def test_every_crash_point_recovers_without_an_operator_and_loses_nothing() -> None:
    spec = ReplicaMoveSpec()
    states = reachable(spec)
    crash_points = [s for s in states if s.up]
    assert len(crash_points) > 50
    for s in crash_points:
        recovered = restart(spec, s)
        if any(recovered.offline):
            # the partition is served from the online dir, or offline on this broker
            assert recovered.current == "none" or not recovered.offline[
                0 if recovered.current == SRC else 1]
        else:
            assert recovered.current != "none", f"no authoritative log after a crash in {s}"
            i = 0 if recovered.current == SRC else 1
            assert recovered.vol[i] >= s.acked, f"acknowledged records lost after a crash in {s}"
            assert recovered.name.count(LIVE) == 1  # recovery leaves one live dir
        assert spec.AtomicMoveSwap(recovered)


def test_two_live_dirs_resolve_to_the_higher_generation() -> None:
    spec = ReplicaMoveSpec()
    crashed = RMState(up=False, current="none", locked=False, vol=(2, 2), dur=(2, 2),
                      name=(LIVE, LIVE), durName=(LIVE, LIVE), acked=2, lateAppend=False,
                      agree=2, skew=0, misplaced=False, start=(0, 0), **HEALTHY)
    recovered = spec.Recover(crashed)
    assert recovered is not None and recovered.starting and recovered.current == "none"
    assert recovered.name == (DELETE, LIVE)  # recovery finishes step S5 itself...
    assert recovered.durName == (LIVE, LIVE)  # ...durable only once D1 is fsynced
    assert spec.Serve(recovered) is None  # nothing is served before that
    fsynced = spec.FsyncDir(recovered, SRC)
    assert fsynced is not None and fsynced.durName == (DELETE, LIVE)
    assert spec.EndSwap(fsynced) is None  # S6 belongs to the swap, not to recovery
    served = spec.Serve(fsynced)
    assert served is not None and served.current == FUT and served.newer == FUT


def test_a_crash_during_recovery_recovers_again_to_the_same_log() -> None:
    """Recover's rename and the fsync of D1 are separate steps: a crash between them (or
    between restarts, again and again) resolves to the future log each time, nothing lost."""
    spec = ReplicaMoveSpec()
    states = reachable(spec)
    mid_recovery = [s for s in states if s.starting and s.name[0] == DELETE
                    and s.durName[0] == LIVE and s.durName[1] == LIVE and not any(s.offline)]
    assert mid_recovery
    for s in mid_recovery:
        again = restart(spec, s)
        assert again.current == FUT and spec.AtomicMoveSwap(again)
        assert again.vol[1] >= s.acked


def test_promoting_a_future_log_that_has_not_caught_up_loses_an_acknowledged_record() -> None:
    spec = spec_of("ReplicaMove_bug_SwapBeforeCopyDone.cfg")
    violation = check(spec).violation
    assert violation is not None and violation.invariant == "AtomicMoveSwap"
    assert [action for action, _ in violation.steps] == [
        "Initial predicate", "Append", "BeginSwap", "Flush", "RenameFutureLive", "FsyncDir",
        "AdvanceHW"]
    last = violation.steps[-1][1]
    assert isinstance(last, RMState) and last.dur[1] < last.acked
    # the correct model refuses that rename: the future log lacks the source's record
    s = violation.steps[3][1]
    assert isinstance(s, RMState) and s.vol == (1, 0)
    assert ReplicaMoveSpec().RenameFutureLive(s) is None


def test_a_lone_future_dir_is_never_promoted() -> None:
    assert Authoritative((DELETE, FUTURE)) == "none"
    spec = ReplicaMoveSpec()
    crashed = RMState(up=False, current="none", locked=False, vol=(0, 1), dur=(0, 1),
                      name=(DELETE, FUTURE), durName=(DELETE, FUTURE), acked=1,
                      lateAppend=False, agree=0, skew=0, misplaced=False, start=(0, 0),
                      **HEALTHY)
    assert restart(spec, crashed).current == "none"  # the partition is not served here
    assert not spec.AtomicMoveSwap(crashed)


def test_copier_copies_only_fsynced_records_from_the_future_log_s_own_position() -> None:
    spec = ReplicaMoveSpec()
    s = RMState(up=True, current=SRC, locked=False, vol=(3, 1), dur=(2, 0),
                name=(LIVE, FUTURE), durName=(LIVE, FUTURE), acked=2, lateAppend=False, agree=1,
                skew=0, misplaced=False, start=(0, 0), **HEALTHY)
    copied = spec.Copy(s)
    assert copied is not None and copied.vol == (3, 2) and copied.agree == 2
    assert spec.Copy(copied) is None  # record 2 is not fsynced in the source yet


def test_appends_wait_while_the_swap_holds_the_lock() -> None:
    s = RMState(up=True, current=SRC, locked=True, vol=(1, 1), dur=(1, 1),
                name=(LIVE, FUTURE), durName=(LIVE, FUTURE), acked=1, lateAppend=False, agree=1,
                skew=0, misplaced=False, start=(0, 0), **HEALTHY)
    assert ReplicaMoveSpec().Append(s) is None
    buggy = ReplicaMoveSpec(ReplicaMoveConfig(bug="AppendDuringSwap"))
    appended = buggy.Append(s)
    assert appended is not None and appended.vol == (2, 1)


def test_unknown_bug_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown Bug"):
        ReplicaMoveConfig(bug="Typo")


# -- Z3 ----------------------------------------------------------------------------------------

def test_z3_proves_atomic_move_swap_unbounded() -> None:
    (result,) = load_z3().prove("none")
    assert result.invariant == "AtomicMoveSwap" and result.holds, result.detail
    assert "inductive with the stated strengthening" in result.detail


@pytest.mark.parametrize("bug", BUGS)
def test_z3_refutes_every_bug_with_readable_steps(bug: str) -> None:
    (result,) = load_z3().prove(bug)
    assert not result.holds and result.invariant == EXPECTED_VIOLATION[bug]
    steps = result.counterexample
    assert steps is not None and steps[0].startswith("Init: up, appends to src, acked=0")
    # a loss needs both the commit (D2's fsync) and the HW's advance: either may come last
    story = {"SwapBeforeFlush": ("AdvanceHW|FsyncDir[fut]",
                                 "fut: name=live (disk live) records=1 (fsynced 0)"),
             "AppendDuringSwap": ("Append", "LATE APPEND"),
             "SeedRenameOrder": ("AdvanceHW|FsyncDir[src]",
                                 "fut: name=future (disk future) records=1 (fsynced 0)"),
             "SwapBeforeCopyDone": ("AdvanceHW|FsyncDir[fut]",
                                    "acked=1, in common 0, skew 0; src: name=live (disk live) "
                                    "records=1 (fsynced 1); fut: name=live (disk live) records=0"),
             "CopierResumesFromHW": ("Copy", "MISPLACED RECORD"),
             "NoRestampOnOfflineDir": ("Serve", "fut: name=live (disk live) records=0 "
                                                "(fsynced 0) OFFLINE")}
    action, words = story[bug]
    assert any(steps[-1].startswith(a + ":") for a in action.split("|")), steps[-1]
    assert words in steps[-1]


# -- TLC itself, when installed -------------------------------------------------------------------


# -- records by identity ------------------------------------------------------------------------

class _CopiesUnflushed(ReplicaMoveSpec):
    """The twin with the copier's guard weakened: it copies source records not fsynced yet."""

    def Copy(self, s: RMState) -> RMState | None:
        if not s.up or s.name[1] != FUTURE or s.vol[1] + s.skew >= s.vol[0]:
            return None
        same = s.skew == 0 and s.agree == s.vol[1]
        return s._replace(vol=(s.vol[0], s.vol[1] + 1), agree=s.agree + 1 if same else s.agree)


def test_copying_an_unflushed_record_is_caught_by_identity_not_by_counts() -> None:
    """The future log keeps a record the source lost in a crash; the source re-appends another
    at that offset and acknowledges it. Counts agree, so only record identity sees the loss."""
    spec = _CopiesUnflushed(ReplicaMoveConfig(max_records=2))
    result = check(spec, packed=False)
    assert result.violation is not None and result.violation.invariant == "AtomicMoveSwap"
    actions = [a for a, _ in result.violation.steps]
    assert "Crash" in actions and actions.index("Copy") < actions.index("Crash")
    last = result.violation.steps[-1][1]
    assert isinstance(last, RMState)
    assert Authoritative(last.durName, last.newer) == FUT  # counts: fine...
    assert last.dur[1] >= last.acked
    assert last.agree < last.acked  # identity: an acknowledged record is not in the future log
    assert check(ReplicaMoveSpec(ReplicaMoveConfig(max_records=2))).holds


def test_a_copier_resumed_from_the_hw_misplaces_a_record() -> None:
    spec = spec_of("ReplicaMove_bug_CopierResumesFromHW.cfg")
    violation = check(spec).violation
    assert violation is not None and violation.invariant == "AtomicMoveSwap"
    assert [a for a, _ in violation.steps][-4:] == ["Crash", "Recover", "Serve", "Copy"]
    resumed = violation.steps[-2][1]
    assert isinstance(resumed, RMState)
    assert resumed.skew == resumed.acked - resumed.dur[1] < 0  # the HW lags the future log
    last = violation.steps[-1][1]
    assert isinstance(last, RMState) and last.misplaced
    # the correct recovery resumes from the future log's own end
    crashed = violation.steps[-4][1]
    assert isinstance(crashed, RMState)
    fixed = ReplicaMoveSpec().Recover(crashed)
    assert fixed is not None and fixed.skew == 0


# -- the source's start offset during the copy -------------------------------------------------

def test_a_raised_start_offset_is_carried_over_before_the_swap() -> None:
    """DeleteRecords during the copy: the swap waits until the future log's start offset is
    the source's, and the committed log never serves below it."""
    spec = ReplicaMoveSpec(ReplicaMoveConfig(max_records=2))
    states = reachable(spec)
    raised = [s for s in states if s.start[0] > 0]
    assert raised and any(s.name[1] == FUTURE and s.start[1] < s.start[0] for s in raised)
    for s in states:
        if Authoritative(s.durName, s.newer) == FUT and s.durName[0] != "none":
            assert s.start[1] == s.start[0], spec.describe(s)
        if s.locked and s.name[1] == FUTURE and s.start[1] < s.start[0]:
            assert spec.RenameFutureLive(s) is None
            followed = spec.FollowStart(s)
            assert followed is not None and followed.start == (s.start[0], s.start[0])
        assert spec.RaiseStart(s) is None or not s.locked  # DeleteRecords waits for the swap


# -- dir failures ------------------------------------------------------------------------------

def test_either_dir_failing_alone_loses_nothing() -> None:
    """The correct .cfg lets the future log's dir fail; the source's failing alone holds too."""
    for fail_dirs in ({SRC}, {FUT}):
        spec = ReplicaMoveSpec(ReplicaMoveConfig(fail_dirs=frozenset(fail_dirs)))
        result = check(spec)
        assert result.holds and result.complete, fail_dirs
        states = reachable(spec)
        assert any(s.offline[0 if SRC in fail_dirs else 1] for s in states)
        # the partition is served again after every restart that finds the dir back
        assert any(s.current != "none" and not s.starting and s.up and s.newer == SRC
                   for s in states) == (fail_dirs == {FUT})


def test_two_dirs_failing_one_after_the_other_is_the_known_limit() -> None:
    """spec/README.md: with both dirs failing in turn, the online dirs cannot tell a stale live
    source from the right one; the twin finds TLC's 16-state behaviour."""
    spec = spec_of("ReplicaMove_limit_TwoDirFailures.cfg")
    assert spec.config.fail_dirs == frozenset({SRC, FUT}) and spec.config.bug == "none"
    violation = check(spec, packed=False).violation
    assert violation is not None and len(violation) == 16
    actions = [a for a, _ in violation.steps]
    assert actions.count("FailDir") == 2 and "Repair" in actions
    last = violation.steps[-1][1]
    assert isinstance(last, RMState) and last.newer == SRC and last.offline == (False, True)


def test_a_restart_with_the_moved_copy_s_dir_failed_re_stamps_the_source() -> None:
    """R6: a crash between S4 and S5, then a restart with D2 failed: the source is served,
    re-stamped above the copy; when D2 is back the copy goes -delete and the move starts again."""
    spec = ReplicaMoveSpec()
    cut = RMState(up=False, current="none", locked=False, vol=(1, 1), dur=(1, 1),
                  name=(LIVE, LIVE), durName=(LIVE, LIVE), acked=1, lateAppend=False, agree=1,
                  skew=0, misplaced=False, start=(0, 0), offline=(False, True), newer=FUT,
                  starting=False)
    served = restart(spec, cut)
    assert served.current == SRC and served.newer == SRC and spec.AtomicMoveSwap(served)
    without = ReplicaMoveSpec(ReplicaMoveConfig(bug="NoRestampOnOfflineDir"))
    assert not without.AtomicMoveSwap(restart(without, cut))
    written = spec.Append(served)
    assert written is not None
    appended = spec.AdvanceHW(next(spec.Flush(written, SRC)))
    assert appended is not None and appended.acked == 2
    crashed = spec.Crash(appended)
    assert crashed is not None
    down = spec.Repair(crashed, FUT)
    assert down is not None
    back = restart(spec, down)
    assert back.current == SRC and back.name == (LIVE, DELETE) and spec.AtomicMoveSwap(back)
    again = spec.RestartMove(back)
    assert again is not None and again.name[1] == FUTURE and again.vol[1] == 0
    assert again.newer == FUT
