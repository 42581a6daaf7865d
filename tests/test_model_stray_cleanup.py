"""StrayCleanup: the Python twin is TLC's machine, every bug is caught by the data it loses, Z3
proves the rest.

The equality with TLC's figures on every .cfg is tests/test_model_conformance.py, and the Z3
relation against the twin tests/test_model_z3_twin.py; this file checks the module's own
protocol, action by action, and its Z3 encoding.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from logwright.model import SPECS, check
from logwright.model.stray_cleanup import (
    BUGS,
    EXPECTED_VIOLATION,
    FULL,
    LAI,
    LIVE,
    NO_LOG,
    STOP,
    STRAY,
    Log,
    Msg,
    SCState,
    StrayCleanupConfig,
    StrayCleanupSpec,
)
from logwright.verify.formal import load_z3_module

SPEC = Path(__file__).resolve().parents[1] / "spec"
BUG_CFGS = [f"StrayCleanup_bug_{bug}.cfg" for bug in BUGS]


def load_z3() -> ModuleType:
    module = load_z3_module("StrayCleanup", SPEC)
    assert module is not None
    return module


def spec_of(cfg: str) -> StrayCleanupSpec:
    return StrayCleanupSpec.from_cfg(SPEC / cfg)


def test_registered_and_reads_the_cfg_tlc_reads() -> None:
    assert SPECS["StrayCleanup"] is StrayCleanupSpec
    assert StrayCleanupConfig.from_cfg(SPEC / "StrayCleanup.cfg") == StrayCleanupConfig(
        brokers=(1, 2), faulty_brokers=(1,), partitions=(1,), max_topic_id=2,
        max_controller_epoch=2, max_seq=2, max_broker_epoch=2, max_time=1, retention_period=1,
        stray_deletion_delay=0, bug="none",
        invariants=("TypeOK", "NoNewDataDeleted", "TopicIdentity"))
    for cfg in BUG_CFGS:
        assert spec_of(cfg).config.bug == cfg.removesuffix(".cfg").split("_bug_")[1]


def test_counterexample_reads_as_the_story_of_the_bug() -> None:
    """A deposed controller's FULL request, delayed past the new controller's reassignment, sets
    aside the replica the broker hosts for the new controller; an hour later it is deleted."""
    spec = spec_of("StrayCleanup_bug_StaleEpochStrayDeletion.cfg")
    violation = check(spec).violation
    assert violation is not None
    text = violation.format(spec)
    assert text.startswith("Invariant NoNewDataDeleted is violated after 10 states:")
    assert [action for action, _ in violation.steps] == [
        "Initial predicate", "Tick", "Unassign", "StopBroker", "StartBroker",
        "ControllerFailover", "Assign", "Deliver", "Deliver", "DeleteStray"]
    assert "sent: FULL to broker 1@2 version (1,2) hosted=[]" in text
    assert text.splitlines()[-1].strip() == "LOST: (1,id 1) on broker 1, written at 0"


@pytest.mark.parametrize("cfg", BUG_CFGS)
def test_every_bug_is_caught_by_the_data_it_loses(cfg: str) -> None:
    """Caught by the lost-data ghost, kept by every deleting step, not by a restated guard: the
    last step of each counterexample removes a log whose data was owed."""
    spec = spec_of(cfg)
    violation = check(spec).violation
    assert violation is not None and violation.invariant == EXPECTED_VIOLATION[spec.config.bug]
    *before, (_, last) = violation.steps
    assert isinstance(last, SCState) and last.lost
    assert all(isinstance(s, SCState) and not s.lost for _, s in before)


# -- the protocol, action by action ------------------------------------------------------------

def initial(spec: StrayCleanupSpec) -> SCState:
    s = next(iter(spec.init_states()))
    assert isinstance(s, SCState)
    return s


def with_logs(spec: StrayCleanupSpec, s: SCState, b: int, logs: tuple[Log, ...]) -> SCState:
    """Broker ``b``'s logs of partition 1 (one per topic id) replaced by ``logs``."""
    return s._replace(disk=spec._set_row(s.disk, b, 1, logs))


def sent(s: SCState) -> list[Msg]:
    return sorted(s.network, key=lambda m: (m.epoch, m.seq, m.to))


def deliver(spec: StrayCleanupSpec, s: SCState, m: Msg) -> SCState:
    after = spec.Deliver(s._replace(network=s.network | {m}), m)
    assert after is not None, m
    return after


def lai(b: int, t: int, epoch: int = 1, seq: int = 1, broker_epoch: int = 1) -> Msg:
    return Msg(LAI, b, broker_epoch, epoch, seq, 1, t, True, frozenset())


def stop(b: int, t: int, epoch: int = 1, seq: int = 1, broker_epoch: int = 1) -> Msg:
    return Msg(STOP, b, broker_epoch, epoch, seq, 1, t, True, frozenset())


def full(b: int, hosted: set[tuple[int, int]], epoch: int = 1, seq: int = 1,
         broker_epoch: int = 1) -> Msg:
    return Msg(FULL, b, broker_epoch, epoch, seq, 0, 0, False, frozenset(hosted))


def test_controller_steps_send_versioned_requests_to_live_brokers_only() -> None:
    spec = StrayCleanupSpec()
    s = spec.DeleteTopic(initial(spec), 1)
    assert s is not None and s.replicas == (frozenset(),) and s.seq == 1
    assert sent(s) == [stop(1, 1), stop(2, 1)]
    down = spec.StopBroker(s, 1)
    assert down is not None
    created = spec.CreateTopic(down, 1, frozenset({1, 2}))
    assert created is not None and created.topicId == (2,)
    assert [m for m in sent(created) if m.kind == LAI] == [lai(2, 2, seq=2)]  # not to broker 1
    assert created.assignedAt == (((1, 2), (1, 2)),)
    assert spec.CreateTopic(created._replace(replicas=(frozenset(),)), 1,
                            frozenset({1})) is None  # no topic id left (MaxTopicId = 2)
    assert spec.Assign(created, 1, 1) is None  # MaxSeq reached, and broker 1 assigned already
    over = spec.ControllerFailover(created)
    assert over is not None and over.seq == 1 and over.controllerEpoch == 2
    assert [m for m in sent(over) if m.epoch == 2] == [full(2, {(1, 2)}, epoch=2)]


def test_incremental_leader_and_isr_sets_another_id_aside_and_hosts_its_own() -> None:
    spec = StrayCleanupSpec()
    s = initial(spec)._replace(now=1, topicId=(2,))
    after = deliver(spec, s, lai(1, 2, seq=1))
    assert spec.log(after, 1, 1, 1) == Log(STRAY, 0, 1)  # the old topic's log, never served
    assert spec.log(after, 1, 1, 2) == Log(LIVE, 1, 0)  # created in the same step
    assert after.appliedVersion[0] == ((1, 1),)
    assert spec.TopicIdentity(after)
    # a stray of the same id is revived from its data, not re-fetched
    back = deliver(spec, after, lai(1, 1, seq=2))
    assert spec.log(back, 1, 1, 1) == Log(LIVE, 0, 0)
    assert spec.log(back, 1, 1, 2) == Log(STRAY, 1, 1)


def test_stop_replica_deletes_only_the_named_topic_id() -> None:
    s0 = initial(StrayCleanupSpec())._replace(topicId=(2,))
    for bug, survives in (("none", True), ("StopReplicaIgnoresTopicId", False)):
        spec = StrayCleanupSpec(StrayCleanupConfig(bug=bug))
        after = deliver(spec, s0, stop(1, 2))
        assert (spec.log(after, 1, 1, 1) == Log(LIVE, 0, 0)) is survives
        assert spec.NoNewDataDeleted(after) is survives  # the old id's young data, unordered


def test_a_request_older_than_one_applied_changes_nothing_for_the_name() -> None:
    """Unassign then Assign back, delivered in the other order: the older StopReplica must not
    delete what the newer LeaderAndIsr hosts (the network reorders; Kafka's is ordered)."""
    spec = StrayCleanupSpec()
    s = spec.Unassign(initial(spec), 1, 1)
    assert s is not None
    s = spec.Assign(s, 1, 1)
    assert s is not None
    older, newer = sent(s)
    assert (older.kind, newer.kind) == (STOP, LAI)
    applied = deliver(spec, s, newer)
    late = deliver(spec, applied, older)
    assert late.disk == applied.disk and late.appliedVersion == applied.appliedVersion
    assert spec.NoNewDataDeleted(late)
    # in send order the same two requests delete and re-create: allowed, nothing owed
    in_order = deliver(spec, deliver(spec, s, older), newer)
    assert spec.log(in_order, 1, 1, 1) == Log(LIVE, 0, 0) and spec.NoNewDataDeleted(in_order)


def test_fencing_by_controller_epoch_and_broker_epoch() -> None:
    spec = StrayCleanupSpec()
    s = initial(spec)._replace(seenEpoch=(2, 1), network=frozenset({full(1, set())}))
    assert spec.Deliver(s, full(1, set())) is None  # a deposed controller's request
    buggy = StrayCleanupSpec(StrayCleanupConfig(bug="StaleEpochStrayDeletion"))
    applied = buggy.Deliver(s, full(1, set()))
    assert applied is not None and buggy.log(applied, 1, 1, 1).state == STRAY
    old = lai(1, 1, broker_epoch=1)
    restarted = initial(spec)._replace(brokerEpoch=(2, 1), network=frozenset({old}))
    assert spec.Deliver(restarted, old) is None  # addressed to the earlier incarnation


def test_restart_forgets_epoch_and_versions_and_registers_anew() -> None:
    spec = StrayCleanupSpec()
    down = spec.StopBroker(initial(spec), 1)
    assert down is not None and down.seenEpoch == (0, 1) and down.appliedVersion[0] == ((0, 0),)
    assert not down.sawFull[0] and spec.StopBroker(initial(spec), 2) is None  # 2 never fails
    up = spec.StartBroker(down, 1)
    assert up is not None and up.brokerEpoch == (2, 1)
    assert sent(up) == [full(1, {(1, 1)}, seq=1, broker_epoch=2)]
    assert spec.StartBroker(spec.StopBroker(up, 1), 1) is None  # MaxBrokerEpoch


def test_full_request_decides_only_names_with_older_applied_versions() -> None:
    spec = StrayCleanupSpec()
    s = with_logs(spec, initial(spec), 1, (Log(LIVE, 0, 0), Log(STRAY, 0, 0)))._replace(
        topicId=(2,), now=1)
    after = deliver(spec, s, full(1, {(1, 2)}, seq=1))
    assert spec.log(after, 1, 1, 1) == Log(STRAY, 0, 1)
    assert spec.log(after, 1, 1, 2) == Log(LIVE, 0, 0)
    assert after.sawFull[0] and after.appliedVersion[0] == ((1, 1),)
    newer = s._replace(appliedVersion=(((1, 2),), ((1, 0),)))
    left = deliver(spec, newer, full(1, {(1, 2)}, seq=1))
    assert left.disk == newer.disk  # an older FULL leaves the name alone
    inverted = StrayCleanupSpec(StrayCleanupConfig(bug="StraySetInverted"))
    wrong = deliver(inverted, s, full(1, {(1, 1)}, seq=1))
    assert inverted.log(wrong, 1, 1, 1) == Log(STRAY, 0, 1)  # the listed, hosted log


def test_an_offline_dir_hides_logs_and_the_bug_supersedes_them() -> None:
    spec = StrayCleanupSpec()
    s = spec.FailDir(initial(spec), 1)
    assert s is not None and spec.FailDir(s, 1) is None and spec.FailDir(s, 2) is None
    m = full(1, set(), seq=1)
    after = deliver(spec, s, m)
    assert after.disk == s.disk and not after.lost  # cannot see, so does not stray
    assert after.appliedVersion == s.appliedVersion and after.seenEpoch == s.seenEpoch
    assert spec.Append(s, 1, 1) is None
    buggy = StrayCleanupSpec(StrayCleanupConfig(bug="NonNewReplicaWithDirOffline"))
    superseded = deliver(buggy, s._replace(now=1), full(1, {(1, 1)}, seq=1))
    assert buggy.log(superseded, 1, 1, 1) == Log(LIVE, 1, 0)  # empty, written "now"
    assert superseded.lost == frozenset({(1, 1, 1, 0)})
    repaired = spec.RepairDir(s, 1)
    assert repaired is not None and repaired.dirOnline == (True, True)


def test_stray_deletion_waits_for_age_delay_and_a_full_request() -> None:
    spec = StrayCleanupSpec(StrayCleanupConfig(max_time=3, retention_period=2,
                                               stray_deletion_delay=1))
    s = with_logs(spec, initial(spec), 1, (Log(STRAY, 1, 2), NO_LOG))._replace(
        replicas=(frozenset({2}),), now=2)
    assert spec.DeleteStray(s, 1, 1, 1) is None  # one tick after the rename is not yet
    s3 = s._replace(now=3)
    assert spec.DeleteStray(s3._replace(sawFull=(False, True)), 1, 1, 1) is None
    assert spec.DeleteStray(s3._replace(dirOnline=(False, True)), 1, 1, 1) is None
    young = with_logs(spec, s3, 1, (Log(STRAY, 2, 2), NO_LOG))
    assert spec.DeleteStray(young, 1, 1, 1) is None  # written 1 ago, retention 2
    deleted = spec.DeleteStray(s3, 1, 1, 1)
    assert deleted is not None and spec.log(deleted, 1, 1, 1) == NO_LOG and not deleted.lost
    no_guard = StrayCleanupSpec(StrayCleanupConfig(max_time=3, retention_period=2,
                                                   stray_deletion_delay=1, bug="NoAgeGuard"))
    lost = no_guard.DeleteStray(young, 1, 1, 1)
    assert lost is not None and lost.lost == frozenset({(1, 1, 1, 2)})


def test_appends_go_only_to_a_replica_hosted_by_an_applied_decision() -> None:
    spec = StrayCleanupSpec()
    s = initial(spec)._replace(now=1)
    wrote = spec.Append(s, 1, 1)
    assert wrote is not None and spec.log(wrote, 1, 1, 1) == Log(LIVE, 1, 0)
    moved = spec.Assign(spec.Unassign(s, 1, 1), 1, 1)  # type: ignore[arg-type]
    assert moved is not None and spec.Append(moved, 1, 1) is None  # not yet applied


def test_a_truncation_makes_a_live_log_s_newest_write_an_earlier_one() -> None:
    """Truncate lowers a live log's lastWrite, on a running broker with its dir online; never a
    stray's, never upwards; then an old enough remainder may be deleted as a stray."""
    spec = StrayCleanupSpec(StrayCleanupConfig(max_time=3, retention_period=2,
                                               stray_deletion_delay=0))
    s = spec.Append(initial(spec)._replace(now=2), 1, 1)
    assert s is not None and spec.log(s, 1, 1, 1) == Log(LIVE, 2, 0)
    cut = spec.Truncate(s, 1, 1, 1, 0)
    assert cut is not None and spec.log(cut, 1, 1, 1) == Log(LIVE, 0, 0)
    assert spec.Truncate(s, 1, 1, 1, 2) is None and spec.Truncate(cut, 1, 1, 1, 1) is None
    assert spec.Truncate(spec.FailDir(s, 1), 1, 1, 1, 0) is None  # type: ignore[arg-type]
    assert spec.Truncate(spec.StopBroker(s, 1), 1, 1, 1, 0) is None  # type: ignore[arg-type]
    stray = with_logs(spec, s, 1, (Log(STRAY, 2, 2), NO_LOG))
    assert spec.Truncate(stray, 1, 1, 1, 0) is None
    names = [a.name for a in spec.actions()]
    assert names[-1] == "Truncate", "last in Next, as in the TLA+ module"


def test_topic_identity_and_type_invariants_can_fail() -> None:
    spec = StrayCleanupSpec()
    s = initial(spec)
    assert spec.TopicIdentity(s) and spec.TypeOK(s) and spec.NoNewDataDeleted(s)
    two = with_logs(spec, s, 2, (Log(LIVE, 0, 0), Log(LIVE, 0, 0)))
    assert not spec.TopicIdentity(two)
    assert not spec.TypeOK(s._replace(now=5))


def test_unknown_bug_and_bad_constants_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown Bug"):
        StrayCleanupConfig(bug="Typo")
    with pytest.raises(ValueError, match="faulty"):
        StrayCleanupConfig(faulty_brokers=(3,))
    with pytest.raises(ValueError, match="start at 1"):
        StrayCleanupConfig(max_seq=0)


# -- Z3 ----------------------------------------------------------------------------------------

def test_z3_proves_no_new_data_deleted_unbounded() -> None:
    (result,) = load_z3().prove("none")
    assert result.invariant == "NoNewDataDeleted" and result.holds, result.detail
    assert "LaterRequestsHost" in result.detail


@pytest.mark.parametrize(("dropped", "action"), [("LaterRequestsHost", "Deliver"),
                                                 ("CurrentIsLive", "")])
def test_z3_strengthening_is_needed_so_the_proof_is_not_vacuous(dropped: str,
                                                                action: str) -> None:
    z3_module = load_z3()
    weaker = [c for c in z3_module.strengthening() if c[0] != dropped]
    result = z3_module.prove_inductive(z3_module.system("none"), "NoNewDataDeleted", weaker)
    assert not result.holds and action in result.detail


@pytest.mark.parametrize("bug", BUGS)
def test_z3_refutes_every_bug_with_readable_steps(bug: str) -> None:
    (result,) = load_z3().prove(bug)
    assert not result.holds and result.invariant == EXPECTED_VIOLATION[bug]
    steps = result.counterexample
    assert steps is not None and steps[0].startswith("Init: now=0 controllerEpoch=1")
    assert len(steps) >= 4
    assert "LOST data of id" in steps[-1] and "LOST" not in steps[-2]
    assert steps[-1].startswith(("Deliver", "DeleteStray"))
