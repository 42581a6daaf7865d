"""Refinement: the implementation's partitions answer to the LogStartOffset twin.

The generic checker (stutter or at most K twin steps, then every invariant), the world's
after-event observer, the one-log projection of the storage harness and the cluster projection,
on normal runs of several seeds, and on broken implementations: hand-built abstract state pairs
that known bugs produce, and faults planted through the mutation catalogue's patches in a copy of
the package, run in a fresh interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mutation.catalogue import ROOT, Mutant, by_name
from mutation.catalogue import apply as plant

from logwright import Cluster
from logwright.conformance import RefinementChecker, RefinementViolation
from logwright.conformance.log_start_offset import (
    ClusterProjection,
    LogStartOffsetRefinement,
    twin_for,
    visible,
)
from logwright.conformance.refinement import NO_STEP
from logwright.model.log_start_offset import LogStartOffsetState
from logwright.verify.storage_campaign import apply, workload
from logwright.verify.storage_oracle import REFINEMENT, InvariantViolation, StorageHarness
from logwright.world.sim import SimWorld

S = LogStartOffsetState


def _checker(replicas: tuple[int, ...] = (1, 2), bug: str = "none",
             max_steps: int = 3) -> RefinementChecker:
    spec = twin_for(replicas, replicas[0], bug)
    return RefinementChecker(LogStartOffsetRefinement(spec), max_steps=max_steps,
                             initial=next(iter(spec.init_states())))


def _s(leo: tuple[int, ...], hw: tuple[int, ...], start: tuple[int, ...] = (0, 0),
       seg: tuple[int, ...] | None = None, ckpt: tuple[int, ...] | None = None,
       flushed: tuple[int, ...] = (0, 0), isr: frozenset[int] = frozenset({1, 2}),
       leader: int = 1, epoch_start: int = 0, committed: int = 0, acked: int = 0) -> S:
    return S(leo, hw, start, seg if seg is not None else start,
             ckpt if ckpt is not None else start, flushed, isr, leader, epoch_start, committed,
             acked)


# ---- the generic checker ----------------------------------------------------------------------

def test_stutters_and_short_paths_pass_and_each_is_labelled() -> None:
    c = _checker()
    s0 = c.last
    assert c.check(s0).actions == ()  # a stutter
    # A produce of three records: one move of three appends.
    s1 = _s((3, 0), (0, 0))
    assert c.check(s1).actions == ("Append×3",)
    # A leader's fetch handling: the follower copies, the leader raises its HW (2 moves).
    s2 = _s((3, 3), (3, 0), committed=3)
    found = c.check(s2)
    assert sorted(found.actions) == ["AdvanceHW(3)", "ApplyFetch(2, o=3, served=(3, 0, 0))"]
    assert c.stutters == 1 and c.steps_by_length == {1: 1, 2: 1}
    # The path's states, the target last: the cluster projection remembers the leader's state
    # in each as one a fetch response may carry (a delayed fetch completed by a produce reads
    # the log between the append and the HW's rise, in the same event).
    assert len(found.states) == 2 and found.states[-1] == s2


def test_a_change_no_step_explains_is_refused_naming_both_states() -> None:
    c = _checker()
    c.check(_s((1, 1), (0, 0)))
    with pytest.raises(RefinementViolation) as info:
        c.check(_s((1, 1), (0, 1)))  # a follower's HW above any HW a leader had
    exc = info.value
    assert exc.reason == NO_STEP and exc.module == "LogStartOffset"
    assert "replica 2 follower: first segment 0, log start 0 (checkpoint 0), HW 1, LEO 1" \
        in exc.after
    assert "HW 0, LEO 1" in exc.before and NO_STEP in str(exc)


def test_k_bounds_the_search() -> None:
    """Four moves apart is too far for K = 3 and near enough for K = 4."""
    target = _s((2, 2), (2, 2), start=(2, 0), seg=(0, 0), ckpt=(2, 0), committed=2)
    # Append×2, ApplyFetch(2), AdvanceHW(2), ApplyFetch(2) (HW), DeleteRecords(2): 5 moves
    for k, ok in ((3, False), (5, True)):
        c = _checker(max_steps=k)
        if ok:
            assert len(c.check(target).actions) == 5
        else:
            with pytest.raises(RefinementViolation, match="no step of the model"):
                c.check(target)


def test_an_invariant_broken_by_a_twin_step_is_named() -> None:
    """With the bug switched on in the twin the step exists, and the invariant catches it."""
    c = _checker(bug="HWIgnoresIsr")
    c.check(_s((1, 0), (0, 0)))
    with pytest.raises(RefinementViolation, match="invariant CommittedDataOnIsr is violated"):
        c.check(_s((1, 0), (1, 0), committed=1))


def test_a_fetch_applies_a_leader_state_seen_before_and_no_other() -> None:
    """The response in flight is hidden: a follower may apply any leader state the projection
    saw (a response served then, applied now), but takes no value the leader never had."""
    seen: list[tuple[int, int, int]] = []
    spec = twin_for((1, 2), 1)
    c = RefinementChecker(LogStartOffsetRefinement(spec, lambda: seen),
                          initial=next(iter(spec.init_states())))
    for s in (_s((4, 0), (0, 0)), _s((4, 4), (0, 0)), _s((4, 4), (4, 0), committed=4),
              _s((4, 4), (4, 0), start=(3, 0), seg=(0, 0), committed=4)):
        c.check(s)
        seen.append((s.leo[0], s.hw[0], s.logStart[0]))
    before = c.last
    # An HW the leader never had (it had 0 and 4; a partial fetch would stop short of LEO 4).
    with pytest.raises(RefinementViolation, match="no step of the model"):
        c.check(_s((4, 4), (4, 3), start=(3, 0), seg=(0, 0), committed=4))
    # The leader raised its start offset to 3 after serving (LEO 4, HW 4, start 0): the
    # follower applies that response now, and its start offset stays 0.
    c.last = before
    assert c.check(_s((4, 4), (4, 4), start=(3, 0), seg=(0, 0), committed=4)).actions == (
        "ApplyFetch(2, o=4, served=(4, 4, 0))",)
    with pytest.raises(RefinementViolation, match="no step of the model"):
        c.check(_s((4, 2), (4, 2), start=(3, 0), seg=(0, 0), committed=4))  # below its HW
    # A follower ahead of a new leader truncates to it, never below its HW.
    c.last = _s((6, 4), (4, 4), committed=4)
    c.check(_s((6, 4), (4, 4), committed=4, leader=2, epoch_start=4))
    assert c.check(_s((4, 4), (4, 4), committed=4, leader=2, epoch_start=4)).actions == (
        "TruncateFollower(1, 4)",)


def test_rebase_checks_invariants_only() -> None:
    c = _checker()
    c.rebase(_s((5, 5), (4, 4), committed=4), "a change outside the projection")
    assert c.last is not None and c.checks == 1
    with pytest.raises(RefinementViolation, match="NeverServeBelowLogStart"):
        c.rebase(_s((5, 5), (6, 4), committed=6))


def test_the_initial_state_must_be_the_models() -> None:
    spec = twin_for((1, 2), 1)
    with pytest.raises(RefinementViolation, match="not an initial state"):
        RefinementChecker(LogStartOffsetRefinement(spec), initial=_s((1, 0), (0, 0)))


# ---- state pairs that known bugs produce -------------------------------------------------------

BUGGY_PAIRS = [
    pytest.param(  # retention deleted a segment above the HW (log start passes it too)
        _s((4, 4), (2, 2), committed=2), _s((4, 4), (2, 2), start=(3, 0), seg=(3, 0),
                                            committed=2),
        id="retention ignores the HW"),
    pytest.param(  # after a restart the start offset is the checkpoint's, below the 1st segment
        _s((4, 4), (4, 4), start=(3, 0), seg=(3, 0), ckpt=(0, 0), flushed=(4, 4), committed=4),
        _s((4, 4), (4, 4), start=(0, 0), seg=(3, 0), ckpt=(0, 0), flushed=(4, 4), committed=4),
        id="start offset loaded from its checkpoint alone"),
    pytest.param(  # DeleteRecords raised the start offset and the checkpoint stayed behind
        _s((4, 4), (4, 4), committed=4), _s((4, 4), (4, 4), start=(2, 0), ckpt=(0, 0),
                                            committed=4),
        id="a raised start offset not made durable"),
    pytest.param(  # the leader's HW rose above what its in-sync follower has
        _s((3, 1), (1, 1), committed=1, flushed=(0, 0)), _s((3, 1), (3, 1), committed=3),
        id="the HW ignores the ISR"),
    pytest.param(  # a truncated follower took the leader's start offset but kept its old HW
        _s((4, 0), (4, 0), start=(3, 0), ckpt=(3, 0), seg=(0, 0), committed=4,
           isr=frozenset({1})),
        _s((4, 3), (4, 0), start=(3, 3), seg=(0, 3), ckpt=(3, 3), flushed=(0, 3),
           committed=4, isr=frozenset({1})),
        id="follower raises its start offset before its HW"),
    pytest.param(  # a leader crashed and lost committed records, nobody else elected
        _s((3, 3), (3, 3), flushed=(1, 3), committed=3),
        _s((1, 3), (1, 3), flushed=(1, 3), committed=3, epoch_start=1),
        id="an in-sync leader loses committed records"),
]


@pytest.mark.parametrize(("before", "after"), BUGGY_PAIRS)
def test_the_check_rejects_what_each_bug_produces(before: S, after: S) -> None:
    c = _checker()
    c.check_invariants(before)  # the state before is a sound one
    with pytest.raises(RefinementViolation):
        c.check_step(before, after)


# ---- the world's observer ---------------------------------------------------------------------

def test_the_world_calls_an_observer_after_every_event_and_stops_when_told() -> None:
    def run(observed: list[int] | None) -> tuple[int, int]:
        world = SimWorld(seed=7)
        stop = world.observe(lambda: observed.append(world.events)) if observed is not None \
            else None
        for i in range(5):
            world.scheduler.schedule(f"t{i}", lambda: None, delay_ms=10 * i)
        world.run_for(25)
        world.step()
        if stop is not None:
            stop()
        world.run_for(100)
        return world.events, world.clock.now_ms()

    seen: list[int] = []
    with_observer, without = run(seen), run(None)
    assert with_observer == without  # the same run, event for event
    assert seen == [1, 2, 3, 4]  # after each event until stopped, none after


# ---- normal runs pass --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_storage_runs_with_crashes_refine_the_twin(seed: int) -> None:
    h = StorageHarness(seed=seed, partitions=3)
    for step in workload(seed, 40):
        apply(h, step)
        h.check()
    h.crash_and_restart()
    h.check()
    steps = sum(sum(p.checker.steps_by_length.values()) for p in h.projections.values())
    assert steps > 10, "the runs changed the logs"


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_cluster_runs_with_crashes_and_leader_changes_refine_the_twin(seed: int) -> None:
    c = Cluster.simulated(brokers=3, log_dirs_per_broker=1, seed=seed, max_delay_ms=10)
    c.create_topic("t", partitions=2, replication_factor=3)
    projection = ClusterProjection(c, "t", 2)
    projection.attach()
    for round_ in range(3):
        for p in range(2):
            c.produce("t", p, [b"v%d" % i for i in range(3)], acks=-1)
        leader = c.partition_state("t", 0).leader
        c.crash_broker(leader, power_loss=round_ % 2 == 0)
        c.produce("t", 0, [b"after"], acks=-1)  # a new leader takes it
        assert c.partition_state("t", 0).leader != leader
        c.restart_broker(leader)
        assert c.run_until_idle(max_ms=60_000)
    assert [r.value for r in c.fetch("t", 1, 0)][:3] == [b"v0", b"v1", b"v2"]
    assert projection.events > 200 and projection.checks > 30  # distinct states checked
    # Most changes are checked as steps; each restart starts a new behaviour.
    assert projection.steps > 3 * projection.rebases > 0
    fetches = [w.checker.steps_by_length for w in projection.watches.values()]
    assert all(sum(by_length.values()) > 10 for by_length in fetches)


# ---- planted faults, through the real code paths ------------------------------------------------

STORAGE_DRIVER = """
from logwright.verify.storage_campaign import apply, workload
from logwright.verify.storage_oracle import InvariantViolation, StorageHarness
for seed in range(6):
    h = StorageHarness(seed=seed, partitions=3)
    try:
        for step in workload(seed, 40):
            apply(h, step)
            h.check()
        h.crash_and_restart()
        h.check()
    except InvariantViolation as exc:
        print("CAUGHT", exc.invariant, "twin" if "LogStartOffset refinement" in str(exc) else "")
        break
else:
    print("MISSED")
"""

CLUSTER_DRIVER = """
from logwright import Cluster
from logwright.conformance import RefinementViolation
from logwright.conformance.log_start_offset import ClusterProjection
c = Cluster.simulated(brokers=3, log_dirs_per_broker=1, seed=3, max_delay_ms=10)
c.create_topic("t", partitions=1, replication_factor=3)
ClusterProjection(c, "t", 1).attach()
try:
    for i in range(6):
        c.produce("t", 0, [b"v"], acks=1)
    c.run_until_idle()
    print("MISSED")
except RefinementViolation as exc:
    print("CAUGHT", exc.reason)
"""


def _run_mutant(name: str, driver: str, tmp_path: Path) -> str:
    shutil.copytree(ROOT / "impl", tmp_path / "impl",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    plant(by_name(name), tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "impl")}
    check = f"import logwright; assert logwright.__file__.startswith({str(tmp_path)!r})\n"
    out = subprocess.run([sys.executable, "-c", check + textwrap.dedent(driver)], env=env,
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(("mutant", "driver", "expected"), [
    ("the recovery point raised past what was fsynced", STORAGE_DRIVER,
     f"CAUGHT {REFINEMENT} twin"),
    ("a raised start offset not made durable", STORAGE_DRIVER, f"CAUGHT {REFINEMENT} twin"),
    # The step check sees it first: an HW above the ISR's least LEO is no AdvanceHW.
    ("the HW ignores the ISR", CLUSTER_DRIVER, f"CAUGHT {NO_STEP}"),
])
def test_a_planted_fault_is_caught_by_the_refinement_check(mutant: str, driver: str,
                                                           expected: str,
                                                           tmp_path: Path) -> None:
    assert _run_mutant(mutant, driver, tmp_path) == expected


FOLLOWER_HW = Mutant(
    name="a follower takes its own LEO as its HW",
    file="impl/logwright/broker/fetch_adapters.py",
    anchor="min(data.high_watermark, log.log_end_offset)))",
    replacement="log.log_end_offset))",
    loss="A follower would serve consumers records the partition never committed.")
"""Planted here, not in the catalogue: every state it makes satisfies the invariants (with one
follower, both replicas hold every offset the follower calls committed), so only the step
check can see it."""

STEP_DRIVER = """
import sys
from logwright import Cluster
from logwright.conformance import RefinementViolation
from logwright.conformance.log_start_offset import ClusterProjection
c = Cluster.simulated(brokers=2, log_dirs_per_broker=1, seed=1, max_delay_ms=10)
c.create_topic("t", partitions=1, replication_factor=2)
ClusterProjection(c, "t", 1, steps=sys.argv[1] == "steps").attach()
try:
    for i in range(6):
        c.produce("t", 0, [b"v"] * (i + 1), acks=1)
    c.run_until_idle()
    print("MISSED")
except RefinementViolation as exc:
    print("CAUGHT", exc.reason)
"""


@pytest.mark.parametrize(("mode", "expected"), [("steps", f"CAUGHT {NO_STEP}"),
                                                ("invariants", "MISSED")])
def test_the_step_check_catches_a_fault_the_invariants_miss(mode: str, expected: str,
                                                            tmp_path: Path) -> None:
    shutil.copytree(ROOT / "impl", tmp_path / "impl",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    plant(FOLLOWER_HW, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "impl")}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(STEP_DRIVER), mode], env=env,
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == expected


def test_the_drivers_pass_on_the_unmutated_code(tmp_path: Path) -> None:
    """The planted-fault runs above can fail only because of the fault."""
    shutil.copytree(ROOT / "impl", tmp_path / "impl",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "impl")}
    for driver in (STORAGE_DRIVER, CLUSTER_DRIVER, STEP_DRIVER):
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(driver), "steps"], env=env,
                             capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout.strip().splitlines()[-1] == "MISSED"


def test_storage_violation_names_the_refinement_invariant() -> None:
    exc = RefinementViolation("LogStartOffset", NO_STEP, "a", "b")
    assert InvariantViolation.of_refinement(StorageHarness(seed=0).tps[0], exc).invariant \
        == REFINEMENT


def test_a_segment_deleted_before_a_power_loss_may_come_back_below_the_start_offset() -> None:
    """Decision recorded in spec/README.md: segment files are deleted without a dir fsync (as in
    Kafka), so a power loss may bring one back; it lies below the durable start offset, the
    abstraction counts it deleted, and nothing in it is served."""
    h = StorageHarness(seed=0, partitions=1, torn_crashes=False)
    tp = h.tps[0]
    for _ in range(6):
        h.produce(tp, 5)
    h.flush(tp)
    h.advance_high_watermark(tp, 30)
    h.pass_time(400_000)  # retention deletes whole segments below the HW
    log = h.log(tp)
    assert log is not None and log.log_start_offset > 0
    start, first = log.log_start_offset, log.segments[0].base_offset
    h.crash_and_restart()  # the deletions were not fsynced
    h.check()
    log = h.log(tp)
    assert log is not None and log.log_start_offset == start
    assert log.segments[0].base_offset < first  # deleted segments are back ...
    projected = h.projections[tp].checker.last
    assert isinstance(projected, LogStartOffsetState)
    assert projected.segStart == (first,)  # ... and counts as deleted


def test_the_isr_floor_is_carried_by_the_search_and_holds_expansions_to_it() -> None:
    """The implementation's ISR floor is not abstracted: the search carries the twin's own
    (an acknowledged deletion raises it), and later ISR expansions must respect it."""
    spec = twin_for((1, 2), 1)
    c = RefinementChecker(LogStartOffsetRefinement(spec), max_steps=3, visible=visible)
    both = _s((2, 2), (2, 2), start=(2, 2), seg=(0, 0), committed=2)
    c.rebase(both)
    # An acknowledgement of the low watermark 2: the target says nothing of the floor (0)...
    c.check(both._replace(acked=2))
    last = c.last
    assert isinstance(last, S) and last.acked == 2 and last.isrFloor == 2  # ...the path does
    # A follower whose durable start offset lies below the floor may not rejoin the ISR.
    lagging = _s((2, 2), (2, 2), start=(2, 0), seg=(0, 0), isr=frozenset({1}), committed=2)
    c.rebase(lagging._replace(isrFloor=2))
    with pytest.raises(RefinementViolation, match="no step of the model"):
        c.check(lagging._replace(isr=frozenset({1, 2})))
    # With the floor at 0 (a leadership that began before the deletion) it may.
    c.rebase(lagging)
    assert c.check(lagging._replace(isr=frozenset({1, 2}))).actions == ("ExpandIsr(2)",)


def _fetch_then_deletion() -> tuple[RefinementChecker, S, S]:
    """Seed 6359's change (traces/regressions/0053): follower 2 handles one fetch response,
    appending 9..11 (flushed at once, ``flush.messages`` 1), taking the HW 9 and the start
    offset 6 (checkpointed), then deleting its segments wholly below 6 (first base 0 to 5)."""
    spec = twin_for((2, 3), 3)
    c = RefinementChecker(LogStartOffsetRefinement(spec), max_steps=3, visible=visible)
    before = S((9, 12), (7, 9), (0, 6), (0, 5), (0, 6), (9, 12), frozenset({2, 3}), 3, 5, 9, 0)
    after = before._replace(leo=(12, 12), hw=(9, 9), logStart=(6, 6), segStart=(5, 5),
                            ckptStart=(6, 6), flushed=(12, 12))
    return c, before, after


def test_a_follower_s_fetch_that_checkpoints_flushes_and_deletes_below_its_start_passes() -> None:
    """ApplyFetch, CheckpointStartOffset, Flush and DeleteOldestSegment×5: four twin moves in
    one event, within the search's three because the follower's ApplyFetch and the checkpoint
    of its raise are one move (the implementation writes the raise before the fetch returns)."""
    c, before, after = _fetch_then_deletion()
    c.rebase(before)
    found = c.check(after)
    assert sorted(found.actions) == [
        "ApplyFetch(2, o=12, served=(12, 9, 6))+CheckpointStartOffset(2)",
        "DeleteOldestSegment(2)×5", "Flush(2, 12)"]
    # The composite is two genuine twin steps: the state between them is the ApplyFetch's.
    mid = twin_for((2, 3), 3).ApplyFetch(before._replace(resp=frozenset({(2, 12, 9, 6)})), 2, 12)
    assert mid is not None and mid.ckptStart == (0, 6) and mid.logStart == (6, 6)


@pytest.mark.parametrize("change", [
    # a segment holding the start offset 6 deleted (first base 7), the start offset kept
    {"segStart": (7, 5)},
    # segments holding records at and above the HW 9 deleted, the start offset with them
    {"segStart": (10, 5), "logStart": (10, 6), "ckptStart": (10, 6)},
    # a start offset above the HW 9
    {"logStart": (10, 6), "ckptStart": (10, 6)},
    # a start offset above the one served (6), at most the HW
    {"logStart": (8, 6), "ckptStart": (8, 6)},
    # a checkpoint above the start offset
    {"ckptStart": (7, 6)},
    # the HW above the one served
    {"hw": (10, 9), "leo": (12, 12)},
])
def test_an_illegal_change_of_the_same_shape_is_still_refused(change: dict[str, object]) -> None:
    """The composite move takes nothing the twin does not: planted variants of seed 6359's
    change that delete a segment at or above the start offset, or raise the start offset
    beyond the HW or the served one, find no path."""
    c, before, after = _fetch_then_deletion()
    c.rebase(before)
    with pytest.raises(RefinementViolation, match="no step of the model"):
        c.check(after._replace(**change))
