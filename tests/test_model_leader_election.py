"""LeaderElection (eligible leader replicas, KIP-966 as logwright implements it): the Python twin
is TLC's machine, every bug is caught, Z3 proves the structural invariants for unbounded epochs
and refutes every bug.

The equality with TLC's figures is tests/test_model_conformance.py (on LeaderElection_small.cfg
and every bug .cfg; LeaderElection.cfg itself in ``logwright verify``); this file checks the
module's own rules, action by action, and its Z3 encoding.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import z3

from logwright.model import SPECS, check
from logwright.model.core import State
from logwright.model.leader_election import (
    BUGS,
    CLEAN,
    EXPECTED_VIOLATION,
    NO_LEADER,
    NO_REPORT,
    UNCLEAN,
    UP,
    LeaderElectionConfig,
    LeaderElectionSpec,
    LEState,
)
from logwright.verify.formal import load_z3_module

SPEC = Path(__file__).resolve().parents[1] / "spec"


def load_z3() -> ModuleType:
    """spec/z3/leader_election.py, loaded the way ``logwright verify`` loads it."""
    module = load_z3_module("LeaderElection", SPEC)
    assert module is not None, "the Z3 encoding exists"
    return module


def spec_of(cfg: str) -> LeaderElectionSpec:
    return LeaderElectionSpec.from_cfg(SPEC / cfg)


def test_registered_and_reads_the_cfg_tlc_reads() -> None:
    assert SPECS["LeaderElection"] is LeaderElectionSpec
    config = LeaderElectionConfig.from_cfg(SPEC / "LeaderElection.cfg")
    assert config == LeaderElectionConfig(
        replicas=(1, 2, 3), min_isr=2, max_records=1, max_epoch=2, unclean_enabled=False,
        bug="none", invariants=("TypeOK", "AckedRecordsSurvive", "LeaderInIsr",
                                "IsrElrDisjoint", "ElrOnlyBelowMinIsr"))


def test_unknown_bug_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown Bug"):
        LeaderElectionConfig(bug="NoSuchBug")


@pytest.mark.parametrize("bug", BUGS)
def test_every_bug_is_caught_and_its_trace_reads_as_its_story(bug: str) -> None:
    spec = spec_of(f"LeaderElection_bug_{bug}.cfg")
    violation = check(spec).violation
    assert violation is not None and violation.invariant == EXPECTED_VIOLATION[bug]
    actions = [a for a, _ in violation.steps]
    last = violation.steps[-1][1]
    assert isinstance(last, LEState)
    text = violation.format(spec)
    # the leader is up and lacks the acknowledged record a replica that acknowledged it holds
    assert last.leader != NO_LEADER and last.proc[last.leader - 1] == UP
    assert not spec.Holds(last, last.leader, 1) and spec.Held(last, 1)
    assert "acked offset 1 (epoch 1)" in text or "acked offset 1 (epoch 2)" in text
    story = {
        "DamagedReplicaKeptInIsr": ["PowerLoss", "Register"],
        "LastIsrMemberKept": ["PowerLoss", "FenceBroker", "Register"],
        "ElectOutsideEligible": ["DirFailure", "FenceBroker"],
        "NoStrictMinIsr": ["ShrinkIsr", "ShrinkIsr", "AdvanceHW", "CleanShutdown",
                           "FenceBroker"],
    }[bug]
    assert actions[-len(story):] == story


# -- the rules, action by action -----------------------------------------------------------------

def roomy(unclean_enabled: bool = False) -> LeaderElectionSpec:
    """The .cfg's twin with room for six leader epochs, so no election hits the bound."""
    return LeaderElectionSpec(LeaderElectionConfig(max_epoch=6,
                                                   unclean_enabled=unclean_enabled))


def start(spec: LeaderElectionSpec) -> LEState:
    s = next(iter(spec.init_states()))
    assert isinstance(s, LEState)
    return s


def step(s: LEState | None) -> LEState:
    assert s is not None
    return s


def acked_by_two(spec: LeaderElectionSpec) -> LEState:
    """Leader 1 wrote a record, 2 copied it, 3 was dropped, and the HW acknowledged it."""
    s = step(spec.Produce(start(spec)))
    s = step(spec.Replicate(s, 2))
    s = step(spec.ShrinkIsr(s, 3))
    s = step(spec.AdvanceHW(s))
    assert s.acked == ((1, frozenset({1, 2})),) and s.isr == {1, 2} and not s.elr
    return s


def test_the_hw_advances_only_with_min_isr_members() -> None:
    spec = roomy()
    s = step(spec.Produce(start(spec)))
    s = step(spec.ShrinkIsr(s, 2))
    assert s.isr == {1, 3} and not s.elr  # two left: MinIsr, no ELR
    s = step(spec.ShrinkIsr(s, 3))
    assert s.isr == {1} and s.elr == {3}  # below MinIsr: the dropped replica is eligible
    assert spec.AdvanceHW(s) is None  # strict min.insync.replicas
    s = step(spec.Replicate(s, 3))
    s = step(spec.IsrExpand(s, 3))
    assert s.isr == {1, 3} and not s.elr  # back to MinIsr: the ELR is emptied
    assert step(spec.AdvanceHW(s)).hw == 1


def test_a_dead_isr_member_joins_the_elr_below_min_isr_and_leads_from_there() -> None:
    spec = roomy()
    s = acked_by_two(spec)
    s = step(spec.CleanShutdown(s, 2))
    s = step(spec.FenceBroker(s, 2))
    assert (s.leader, s.isr, s.elr, s.leaderEpoch) == (1, {1}, {2}, 2)
    s = step(spec.CleanShutdown(s, 1))
    s = step(spec.FenceBroker(s, 1))
    assert (s.leader, s.isr, s.elr) == (NO_LEADER, frozenset(), {1, 2})  # offline, not lost
    s = step(spec.Register(s, 2))  # a clean start: still eligible, and alive
    assert (s.leader, s.isr, s.elr) == (2, {2}, {1})
    assert spec.Holds(s, 2, 1) and spec.AckedRecordsSurvive(s)


def test_an_unclean_start_leaves_the_isr_and_the_elr_at_once() -> None:
    spec = roomy()
    s = acked_by_two(spec)
    s = step(spec.PowerLoss(s, 1))  # the record was not flushed: it is gone from 1
    assert s.log[0] == () and s.proc[0] == UNCLEAN and s.alive[0]  # not noticed yet
    s = step(spec.Register(s, 1))  # before the session expired
    assert (s.leader, s.isr) == (2, {2}) and 1 not in s.elr
    assert spec.AckedRecordsSurvive(s)


def test_a_failed_dir_takes_the_replica_out_at_once() -> None:
    spec = roomy()
    s = acked_by_two(spec)
    s = step(spec.DirFailure(s, 1))
    assert s.log[0] == () and not s.alive[0] and s.proc[0] == UNCLEAN
    assert (s.leader, s.isr, s.elr) == (2, {2}, frozenset())


def test_recovery_election_waits_for_every_replica_and_picks_the_highest_log() -> None:
    spec = roomy()
    s = acked_by_two(spec)
    s = step(spec.Flush(s, 2))
    for r in (1, 2):
        s = step(spec.PowerLoss(s, r))
    s = step(spec.Register(s, 1))  # unclean: out of the ISR; 2 leads alone
    assert (s.leader, s.isr) == (2, {2})
    s = step(spec.Register(s, 2))  # unclean too (its flushed record survived)
    assert (s.leader, s.isr, s.elr) == (NO_LEADER, frozenset(), frozenset())
    # reported with registration: (agreeing with the lineage up to, last epoch, end)
    assert s.recoveryLogEnds == (NO_REPORT, (1, 1, 1), NO_REPORT)
    s = step(spec.ReportLogEnd(s, 1))
    assert s.leader == NO_LEADER  # replica 3 has not reported
    s = step(spec.ReportLogEnd(s, 3))
    assert (s.leader, s.isr) == (2, {2})  # the highest log end: 2's record survived
    assert s.recoveryLogEnds == (NO_REPORT,) * 3 and spec.AckedRecordsSurvive(s)


def test_an_unclean_election_reports_the_loss() -> None:
    spec = roomy(unclean_enabled=True)
    s = acked_by_two(spec)
    for r in (1, 2):
        s = step(spec.CleanShutdown(s, r))
        s = step(spec.FenceBroker(s, r))
    # 3 is alive, outside the ISR and the ELR: it leads at once, and the loss is reported
    assert (s.leader, s.isr, s.elr) == (3, {3}, frozenset()) and s.lossReported
    assert not spec.Holds(s, 3, 1) and spec.AckedRecordsSurvive(s)  # reported, so allowed


def test_the_epoch_bound_is_a_constraint_checked_beyond_it() -> None:
    spec = LeaderElectionSpec(LeaderElectionConfig(max_epoch=1))
    s = step(spec.CleanShutdown(start(spec), 1))
    t = step(spec.FenceBroker(s, 1))  # elects 2 in epoch 2: checked, not explored further
    assert (t.leader, t.leaderEpoch) == (2, 2) and spec.TypeOK(t) and not spec.constraint(t)
    assert step(spec.Register(s, 1)).leader == 1  # a clean restart changes nothing


def _run(spec: LeaderElectionSpec, actions: tuple[str, ...]) -> LEState:
    s = start(spec)
    for action in actions:
        name, _, arg = action.rstrip(")").partition("(")
        fn = getattr(spec, name)
        s = step(fn(s, int(arg)) if arg else fn(s))
    return s


def test_isr_expand_needs_the_epoch_start_offset_and_a_log_without_divergent_records() -> None:
    """The implementation's replicas_to_add_to_isr: the follower's fetch offset reaches the HW
    and the start offset of the leader's epoch, and a fetch counts only after the leader epoch
    protocol truncated the follower's divergent records. These were the first steps of two
    behaviours that broke AckedRecordsSurvive beyond the epoch bound with the HW rule alone."""
    spec = roomy()
    # 3 leads in epoch 3 with the record of epoch 1 that 2 lost: its epoch starts at 1
    s = _run(spec, ("Produce", "Replicate(2)", "Replicate(3)", "AdvanceHW", "CleanShutdown(1)",
                    "PowerLoss(2)", "FenceBroker(1)", "Register(2)"))
    assert (s.leader, s.leaderEpoch, s.hw, s.epochStartOffset) == (3, 3, 0, 1)
    assert s.log[1] == () and spec.IsrExpand(s, 2) is None  # at the HW, below the epoch start
    s = step(spec.Replicate(s, 2))
    assert step(spec.IsrExpand(s, 2)).isr == {2, 3}
    # 1 holds a record of epoch 1 where leader 2 holds one of epoch 2: it must truncate first
    s = _run(spec, ("Produce", "Replicate(3)", "Flush(1)", "PowerLoss(1)", "Register(1)",
                    "Produce"))
    assert s.leader == 2 and s.log[0] == (1,) and s.log[1] == (2,) and s.epochStartOffset == 0
    assert spec.CommonPrefix(s, 1, 2) == 0 >= s.hw and spec.IsrExpand(s, 1) is None
    s = step(spec.Replicate(s, 1))
    assert s.log[0] == (2,) and step(spec.IsrExpand(s, 1)).isr == {1, 2, 3}


def test_the_epoch_cache_holds_a_leader_s_epoch_and_a_load_keeps_it_at_the_log_end() -> None:
    """A new leader records its epoch in its leader epoch cache with no record of it; a
    follower's copy records the record's epoch; the report is the cache's latest epoch; loading
    the log at a restart drops the epochs that begin past its end and keeps one that begins
    exactly there (the file itself is durable): a power loss leaves the first lost record's
    epoch, or the cache's latest when nothing is lost."""
    spec = roomy()
    s = start(spec)
    assert s.cacheEpoch == (1, 0, 0) and s.epochStartOffset == 0
    s = step(spec.Replicate(step(spec.Produce(s)), 2))
    assert s.cacheEpoch == (1, 1, 0)
    s = step(spec.PowerLoss(s, 1))  # its record lost: epoch 1 began at offset 0, the new end
    assert s.cacheEpoch == (1, 1, 0) and s.epochStartOffset == 0  # the file kept, leader down
    s = step(spec.Register(s, 1))  # unclean: 2 leads in epoch 2, at its log end 1
    assert (s.leader, s.leaderEpoch, s.epochStartOffset) == (2, 2, 1)
    assert s.cacheEpoch == (1, 2, 0) and spec.LogEnd(s, 2)[1:] == (2, 1)
    assert spec.LogEnd(s, 1)[1:] == (0, 0)  # an empty log reports no epoch
    s = step(spec.CleanShutdown(s, 2))
    assert s.cacheEpoch[1] == 2 and s.epochStartOffset == 0
    s = step(spec.Register(s, 2))  # the load keeps epoch 2 (it begins at the log's end)
    assert s.leader == 2 and s.cacheEpoch[1] == 2 and s.epochStartOffset == 1
    # nothing lost (flushed at the clean shutdown): the latest epoch, at the log's end, stays
    s = step(spec.PowerLoss(s, 2))
    assert s.log[1] == (1,) and s.cacheEpoch[1] == 2
    s = step(spec.Register(s, 2))
    assert s.cacheEpoch[1] == 2 and spec.LogEnd(s, 2)[1:] == (2, 1)


def test_a_follower_records_its_leader_s_epoch_once_its_log_reaches_the_epoch_start() -> None:
    """FollowLeaderEpoch (the implementation's _follow_epoch): the leader's fetch answer carries
    its epoch and the offset it began at; a follower whose log reaches that offset records the
    epoch there, so its report is the epoch it follows, not only its records' epochs. A fetch
    that changes only the cache is a step; below the epoch start the cache keeps the records'."""
    spec = LeaderElectionSpec(LeaderElectionConfig(max_records=2, max_epoch=6))
    s = _run(spec, ("Produce", "Produce", "Replicate(2)", "Replicate(2)", "CleanShutdown(1)",
                    "FenceBroker(1)"))
    assert (s.leader, s.leaderEpoch, s.epochStartOffset) == (2, 2, 2)
    assert s.log == ((1, 1), (1, 1), ()) and s.cacheEpoch == (1, 2, 0)
    s = step(spec.Replicate(s, 3))  # one record: below the epoch start, the record's epoch
    assert s.log[2] == (1,) and s.cacheEpoch[2] == 1 and spec.LogEnd(s, 3)[1:] == (1, 1)
    s = step(spec.Replicate(s, 3))  # the log reaches offset 2, where epoch 2 began
    assert s.log[2] == (1, 1) and s.cacheEpoch[2] == 2 and spec.LogEnd(s, 3)[1:] == (2, 2)
    assert spec.Replicate(s, 3) is None  # nothing left to change
    # a follower that held the leader's log before the epoch began: a fetch of no record
    s = _run(spec, ("Produce", "Replicate(2)", "Replicate(3)", "CleanShutdown(1)",
                    "FenceBroker(1)"))
    assert (s.leader, s.leaderEpoch, s.epochStartOffset, s.cacheEpoch) == (2, 2, 1, (1, 2, 1))
    t = step(spec.Replicate(s, 3))
    assert t.log == s.log and t.flushed == s.flushed and t.cacheEpoch == (1, 2, 2)
    assert spec.Replicate(t, 3) is None


def test_describe_names_the_loss() -> None:
    spec = roomy()
    s = acked_by_two(spec)
    text = spec.describe(step(spec.PowerLoss(s, 1)))
    assert "replica 1: unclean, alive, log [] flushed 0" in text
    assert "acked offset 1 (epoch 1) by [1, 2], held by [2]" in text
    assert CLEAN in spec.describe(step(spec.CleanShutdown(s, 2)))


# -- Z3 ----------------------------------------------------------------------------------------

def test_z3_proves_every_invariant_by_induction() -> None:
    """AckedRecordsSurvive with the stated strengthening (rlimit 5,496,556 of ACKED_RLIMIT
    50,000,000), the structural invariants each alone."""
    results = {r.invariant: r for r in load_z3().prove("none")}
    assert set(results) == {"AckedRecordsSurvive", "LeaderInIsr", "IsrElrDisjoint",
                            "ElrOnlyBelowMinIsr"}
    assert all(r.holds and not r.undecided for r in results.values()), [
        r.detail for r in results.values()]
    for result in results.values():
        assert result.method == "z3 induction" and "inductive" in result.detail
    assert "AnyHolderOnLineage" in results["AckedRecordsSurvive"].detail


def test_acked_records_survive_alone_is_not_inductive() -> None:
    """Without the strengthening the induction fails (a counterexample to induction, not an
    undecided check): the conjuncts are needed."""
    z3_module = load_z3()
    common = import_module(z3_module.__package__ + ".common")
    result = common.prove_inductive(z3_module.system(), "AckedRecordsSurvive",
                                    z3_module.strengthening(), rlimit=z3_module.ACKED_RLIMIT)
    assert not result.holds and not result.undecided
    assert "does not preserve AckedRecordsSurvive" in result.detail


@pytest.mark.parametrize("bug", BUGS)
def test_the_acked_strengthening_proves_no_bug(bug: str) -> None:
    """With each bug switched on the same induction fails: the proof depends on the model's
    rules, and a bug never comes out proved (nor undecided)."""
    z3_module = load_z3()
    common = import_module(z3_module.__package__ + ".common")
    result = common.prove_inductive(z3_module.system(bug), "AckedRecordsSurvive",
                                    z3_module.acked_strengthening(),
                                    rlimit=z3_module.ACKED_RLIMIT)
    assert not result.holds and not result.undecided, result.detail
    assert "does not preserve" in result.detail


def test_the_acked_strengthening_holds_on_random_walks_of_the_twin() -> None:
    """Every stated conjunct is true (not only inductive) on every state of seeded random walks
    of the twin with two records and room for twelve leader epochs, read by the encoding's view
    of the twin."""
    z3_module = load_z3()
    spec = LeaderElectionSpec(LeaderElectionConfig(max_records=2, max_epoch=12))
    (view,) = z3_module.twin_views(spec)
    ts = z3_module.system()
    sym = ts.state("s")
    conjuncts = [(name, fn(sym)) for name, fn in z3_module.acked_strengthening()]
    seen: set[Any] = set()
    for s in _walk(spec, seed=20261129, walks=30):
        values = view.abstract(s)
        key = tuple(sorted(values.items()))
        if key not in seen:
            seen.add(key)
            pins = [(sym[n], z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v))
                    for n, v in values.items()]
            for name, formula in conjuncts:
                assert z3.is_true(z3.simplify(z3.substitute(formula, *pins))), (
                    f"{name}:\n{spec.describe(s)}")
    assert len(seen) > 1000


def _walk(spec: LeaderElectionSpec, seed: int, walks: int, steps: int = 60) -> Iterator[State]:
    """Every state of ``walks`` seeded random walks of the twin from its start, each ending at
    ``steps`` steps, a deadlock, or the first state outside the constraint (yielded too)."""
    rng = random.Random(seed)
    actions = spec.actions()
    for _ in range(walks):
        s: State = start(spec)
        for _ in range(steps):
            nexts = [t for _, fn in actions for t in fn(s)]
            if not nexts:
                break
            s = rng.choice(nexts)
            yield s
            if not spec.constraint(s):
                break


@pytest.mark.parametrize("bug", ["DamagedReplicaKeptInIsr", "NoStrictMinIsr"])
def test_z3_refutes_a_bug_with_readable_steps(bug: str) -> None:
    (result,) = load_z3().prove(bug)
    assert not result.holds and result.invariant == "AckedRecordsSurvive"
    steps = result.counterexample
    assert steps is not None and steps[0].startswith("Init: leader 1 epoch 1 ISR [1, 2, 3]")
    last = steps[-1].split("(")[0]
    assert last in {"DamagedReplicaKeptInIsr": {"Register"},
                    "NoStrictMinIsr": {"FenceBroker", "Register", "DirFailure"}}[bug]


# -- AckedRecordsSurvive beyond the epoch bound: a known defect of the model ------------------

# TLC's shortest violation at MaxEpoch 3 while a start-up dropped the epoch that begins at the
# log's end (spec/README.md, LeaderElection): 3 led epoch 3 from offset 1 and kept its record of
# epoch 1 through a power loss, but its load dropped epoch 3, so it reported (1, 1) below 2's
# divergent (2, 1) and 2 was elected.
RECOVERY_PICKS_DIVERGENT_LOG = (
    "Produce", "Replicate(3)", "Flush(3)", "PowerLoss(1)", "Register(1)", "Produce",
    "CleanShutdown(2)", "FenceBroker(2)", "Replicate(1)", "IsrExpand(1)", "RecordLineage",
    "AdvanceHW",
    "PowerLoss(1)", "ShrinkIsr(1)", "PowerLoss(3)", "Register(1)", "Register(3)",
    "Register(2)", "ReportLogEnd(1)")


def _twin_run(actions: tuple[str, ...], max_records: int = 1
              ) -> tuple[LeaderElectionSpec, list[LEState]]:
    """The twin (the .cfg's constants but ``max_records``, room for eight leader epochs)
    along ``actions``, the Z3 encoding's action names (``"Register(2)"``): every state, Init
    first."""
    spec = LeaderElectionSpec(LeaderElectionConfig(max_records=max_records, max_epoch=8))
    states = [start(spec)]
    for action in actions:
        name, _, arg = action.rstrip(")").partition("(")
        fn = getattr(spec, name)
        states.append(step(fn(states[-1], int(arg)) if arg else fn(states[-1])))
    return spec, states


def _z3_run(actions: tuple[str, ...]) -> tuple[ModuleType, Any, list[dict[str, Any]]]:
    """The Z3 encoding (unbounded epochs) along ``actions`` from Init: every step enabled in
    turn (the model of the path, and its states)."""
    z3_module = load_z3()
    solver, zs = z3_module.path(z3_module.system(), actions)
    assert solver.check() == z3.sat
    return z3_module, solver.model(), zs


FORMER = sorted(load_z3().FORMER_VIOLATIONS.items())


@pytest.mark.parametrize(("name", "actions"), FORMER, ids=[n for n, _ in FORMER])
def test_former_violations_are_gone_in_twin_and_z3(name: str, actions: tuple[str, ...]) -> None:
    """No former violation is one any more: the Z3 encoding (unbounded epochs) finds no run of
    the sequence that ends in a violation, and in the twin AckedRecordsSurvive holds along it
    as far as its actions are enabled."""
    assert load_z3().replay(actions) is None, name
    spec = LeaderElectionSpec(LeaderElectionConfig(max_records=2, max_epoch=8))
    s = start(spec)
    for action in actions:
        assert spec.AckedRecordsSurvive(s), f"{name}:\n{spec.describe(s)}"
        fname, _, arg = action.rstrip(")").partition("(")
        fn = getattr(spec, fname)
        nxt = fn(s, int(arg)) if arg else fn(s)
        if nxt is None:
            break
        s = nxt
    assert spec.AckedRecordsSurvive(s), f"{name}:\n{spec.describe(s)}"


def test_isr_expand_before_follow_leader_epoch_is_no_longer_a_behaviour() -> None:
    """IsrExpandBeforeFollowLeaderEpoch (a violation in epoch 5 while IsrExpand did not wait for
    FollowLeaderEpoch): 1 holds the record of epoch 1 from before 3's epoch 3 began, its log
    reaches the epoch start, but its cache still says epoch 1: IsrExpand(1) is disabled, in the
    twin and in Z3, until a fetch of no record (FollowLeaderEpoch) records epoch 3."""
    actions = load_z3().FORMER_VIOLATIONS["IsrExpandBeforeFollowLeaderEpoch"]
    at = actions.index("IsrExpand(1)")
    spec, states = _twin_run(actions[:at])
    s = states[-1]
    assert (s.leader, s.leaderEpoch, s.epochStartOffset) == (3, 3, 1)
    assert len(s.log[0]) == 1 and s.cacheEpoch[0] == 1
    assert spec.IsrExpand(s, 1) is None
    followed = step(spec.Replicate(s, 1))
    assert followed.cacheEpoch[0] == 3 and step(spec.IsrExpand(followed, 1)).isr == {1, 3}
    _z3_run(actions[:at])
    with pytest.raises(AssertionError):
        _z3_run(actions[:at + 1])
    _z3_run((*actions[:at], "Replicate(1)", "IsrExpand(1)"))


def test_recovery_picks_divergent_log_over_a_copy_now_elects_a_replica_that_holds_the_record(
        ) -> None:
    """RecoveryPicksDivergentLogOverACopy (TLC's shortest at MaxEpoch 3 before FollowLeaderEpoch)
    is still a behaviour, step for step, of the twin and of the Z3 encoding (unbounded epochs),
    but 1's copy of the record, back from 3, records 3's epoch 3 (its log reaches 3's epoch
    start): the recovery election compares 1's (3, 1) with 2's (2, 1) and picks 1, which holds
    the acknowledged record; AckedRecordsSurvive holds throughout (TLC at MaxEpoch 3 finds no
    violation at all)."""
    actions = load_z3().FORMER_VIOLATIONS["RecoveryPicksDivergentLogOverACopy"]
    spec, states = _twin_run(actions)
    assert all(spec.AckedRecordsSurvive(s) for s in states)
    copied = len(actions) - 1 - actions[::-1].index("Replicate(1)")
    assert states[copied + 1].cacheEpoch[0] == 3
    assert spec.LogEnd(states[copied + 1], 1)[1:] == (3, 1)
    last = states[-1]
    assert last.leader == 1 and last.leaderEpoch == 4 and spec.Holds(last, 1, 1)
    assert spec.Held(last, 1) and not last.lossReported
    z3_module, model, zs = _z3_run(actions)
    assert z3_module.replay(actions) is None  # no violation at its end
    assert [model.eval(zs[copied + 1][n]).as_long() for n in ("cacheEpoch_1", "len_1")] == [3, 1]
    assert model.eval(zs[-1]["leader"]).as_long() == 1


def test_recovery_picks_the_log_that_led_the_later_epoch_in_twin_and_z3() -> None:
    """The former RecoveryPicksDivergentLog is still a behaviour, step for step, of the twin
    and of the Z3 encoding (unbounded epochs), but at Register(3) the load keeps 3's epoch 3,
    which begins at its log's end: 3 reports (3, 1), above 2's (2, 1), and the recovery
    election picks 3, which holds the acknowledged record; AckedRecordsSurvive holds throughout."""
    actions = RECOVERY_PICKS_DIVERGENT_LOG
    spec, states = _twin_run(actions)
    assert all(spec.AckedRecordsSurvive(s) for s in states)
    at = actions.index("Register(3)") + 1
    assert states[at].recoveryLogEnds[2][1:] == (3, 1)
    assert states[at + 1].recoveryLogEnds[1][1:] == (2, 1)
    last = states[-1]
    assert last.leader == 3 and last.leaderEpoch == 4 and spec.Holds(last, 3, 1)
    assert spec.Held(last, 1) and not last.lossReported
    z3_module, model, zs = _z3_run(actions)
    assert z3_module.replay(actions) is None  # no violation at its end
    # every step enabled in Z3, and Register(3) reports (3, 1) there too
    assert [model.eval(zs[at][n]).as_long() for n in ("endE_3", "endO_3")] == [3, 1]
    assert model.eval(zs[-1]["leader"]).as_long() == 3


# -- AckedRecordsSurvive with two records: the lineage ------------------------------------------

def _twin_run_two_records(actions: tuple[str, ...]) -> tuple[LeaderElectionSpec, list[LEState]]:
    """The twin with two records along ``actions`` (:func:`_twin_run`)."""
    return _twin_run(actions, max_records=2)


def test_recovery_elects_the_short_copy_that_agrees_with_the_lineage() -> None:
    """RecoveryPicksDivergentLogOverAShortCopy (a violation with two records until the lineage)
    is a behaviour, step for step, of the twin (two records) and of the Z3 encoding (unbounded
    epochs): 1 copies the acknowledged record X back from leader 2 short of 2's epoch start, so
    its cache says X's epoch 1; 3 holds a divergent record of epoch 3 at X's offset. Ranked by
    last epoch, 3's (3, 1) beat 1's (1, 1) and X was lost. The lineage the controller recorded
    when 2 took up epoch 5 is 2's log then, [1, 4]: 1's [1] agrees with it up to 1, 3's [3] not
    at all, and the recovery election elects 1, with X. AckedRecordsSurvive holds throughout."""
    actions = load_z3().FORMER_VIOLATIONS["RecoveryPicksDivergentLogOverAShortCopy"]
    spec, states = _twin_run_two_records(actions)
    acked = actions.index("AdvanceHW") + 1
    assert states[acked].acked == ((1, frozenset({1, 2})), (4, frozenset({1, 2})))
    assert all(spec.Held(s, 1) for s in states[acked:])
    assert all(spec.AckedRecordsSurvive(s) for s in states)
    copied = len(actions) - actions[::-1].index("Replicate(1)")
    short = states[copied]
    assert (short.leader, short.leaderEpoch, short.epochStartOffset) == (2, 5, 2)
    assert short.lineage == (5, (1, 4))
    assert short.log[0] == (1,) and short.cacheEpoch[0] == 1
    assert spec.LogEnd(short, 1) == (1, 1, 1)  # agrees up to 1, last epoch 1, end 1
    assert states[-2].recoveryLogEnds == ((1, 1, 1), (0, 0, 0), NO_REPORT)
    assert spec.LogEnd(states[-2], 3) == (0, 3, 1)  # D disagrees at once
    last = states[-1]
    assert (last.leader, last.leaderEpoch) == (1, 6)
    assert spec.Holds(last, 1, 1) and not last.lossReported and spec.AckedRecordsSurvive(last)
    z3_module, model, zs = _z3_run(actions)
    assert z3_module.replay(actions) is None
    assert model.eval(zs[-1]["leader"]).as_long() == 1
    assert [model.eval(zs[-2][n]).as_long() for n in ("endP_1", "endE_1", "endO_1")] == [1, 1, 1]


def test_the_hw_waits_for_the_controller_to_record_the_lineage_of_its_epoch() -> None:
    """RecordLineage: a new leader's HW does not advance in its epoch until the controller has
    recorded the epoch's lineage (its log below the epoch's start), in the twin and in Z3."""
    spec = LeaderElectionSpec(LeaderElectionConfig(max_records=2, max_epoch=6))
    s = _run(spec, ("Produce", "Replicate(2)", "Replicate(3)", "CleanShutdown(1)",
                    "FenceBroker(1)", "Produce", "Replicate(3)"))
    assert (s.leader, s.leaderEpoch, s.epochStartOffset, s.lineage) == (2, 2, 1, (1, ()))
    assert spec.AdvanceHW(s) is None, "epoch 2's lineage is not recorded"
    s = step(spec.RecordLineage(s))
    assert s.lineage == (2, (1,)) and spec.RecordLineage(s) is None
    assert step(spec.AdvanceHW(s)).hw == 2
    _z3_run(("Produce", "Replicate(2)", "Replicate(3)", "CleanShutdown(1)", "FenceBroker(1)",
             "Produce", "Replicate(3)", "RecordLineage", "AdvanceHW"))
    with pytest.raises(AssertionError):
        _z3_run(("Produce", "Replicate(2)", "Replicate(3)", "CleanShutdown(1)",
                 "FenceBroker(1)", "Produce", "Replicate(3)", "AdvanceHW"))


def test_acked_records_survive_on_random_walks_with_two_records() -> None:
    """Seeded random walks of the twin with two records and room for twelve leader epochs
    (beyond any .cfg TLC checks): every invariant holds in every state reached. No violation
    is known (``KNOWN_VIOLATIONS`` is empty)."""
    assert load_z3().KNOWN_VIOLATIONS == {}
    spec = LeaderElectionSpec(LeaderElectionConfig(max_records=2, max_epoch=12))
    invariants = spec.invariants()
    for s in _walk(spec, seed=20261128, walks=150):
        for name, holds in invariants:
            assert holds(s), f"{name}:\n{spec.describe(s)}"
