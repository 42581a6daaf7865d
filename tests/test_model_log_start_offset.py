"""LogStartOffset: the Python twin is TLC's machine, every bug is caught, and Z3 proves the rest.

The figures compared against are spec/tlc_figures.json, written from TLC runs on the same .cfg
files; TLC itself is not needed here.
"""

from __future__ import annotations

import json
from collections import deque

import pytest

from logwright.model import SPECS, check
from logwright.model.log_start_offset import (
    BUGS,
    EXPECTED_VIOLATION,
    LogStartOffsetConfig,
    LogStartOffsetSpec,
    LogStartOffsetState,
)
from logwright.verify.formal import load_z3_module, spec_dir

SPEC = spec_dir()
FIGURES = json.loads((SPEC / "tlc_figures.json").read_text())
CFGS = sorted(SPEC.glob("LogStartOffset*.cfg"))
BUG_CFGS = [c for c in CFGS if "_bug_" in c.name]


def test_every_bug_has_a_cfg_and_figures() -> None:
    assert {c.stem.split("_bug_")[1] for c in BUG_CFGS} == set(BUGS)
    assert SPECS["LogStartOffset"] is LogStartOffsetSpec
    for cfg in CFGS:
        assert cfg.name in FIGURES


def test_config_is_read_from_the_cfg_tlc_reads() -> None:
    config = LogStartOffsetConfig.from_cfg(SPEC / "LogStartOffset.cfg")
    assert config == LogStartOffsetConfig(replicas=(1, 2), leader=1, max_offset=2,
                                          segment_size=2, bug="none")
    with pytest.raises(ValueError, match="unknown Bug"):
        LogStartOffsetConfig(bug="Typo")


def _reachable(spec: LogStartOffsetSpec) -> set[LogStartOffsetState]:
    seen = set(spec.init_states())
    queue = deque(seen)
    while queue:
        s = queue.popleft()
        for _, fn in spec.actions():
            for t in fn(s):
                if t not in seen:
                    seen.add(t)
                    queue.append(t)
    return seen  # type: ignore[return-value]


# The packed actions against the Python actions, on every reachable state of a small model of
# each bug: tests/test_model_agreement.py (and every shipped .cfg: logwright verify --suite
# agreement).


def test_generic_and_packed_engines_agree_on_a_small_model() -> None:
    spec = LogStartOffsetSpec(LogStartOffsetConfig(replicas=(1, 2), max_offset=1,
                                                   segment_size=1))
    a, b = check(spec, packed=False), check(spec, packed=True)
    assert (a.generated, a.distinct, a.depth) == (b.generated, b.distinct, b.depth)
    assert a.distinct == len(_reachable(spec))


def test_actions_guard_what_the_tla_guards() -> None:
    spec = LogStartOffsetSpec()
    s0 = next(iter(spec.init_states()))
    assert isinstance(s0, LogStartOffsetState)
    assert spec.DeleteRecords(s0, 1) is None  # above the HW
    assert spec.AdvanceHW(s0, 1) is None  # nothing to commit
    assert spec.ServeFetch(s0, 1) is None  # the leader does not fetch
    s1 = spec.Append(s0)
    assert s1 is not None and s1.leo == (1, 0)
    assert spec.AdvanceHW(s1, 1) is None  # follower 2, in the ISR, has not fetched it
    assert spec.ShrinkIsr(s1, 2) is not None and spec.ShrinkIsr(s1, 1) is None
    assert spec.CrashRestart(s1, 1, 1, 1) is None  # the restored HW is at most the HW it had
    lost = spec.CrashRestart(s1, 1, 0, 0)  # the unflushed record may be lost
    assert lost is not None and lost.leo == (0, 0) and lost.epochStart == 0
    flushed = spec.Flush(s1, 1, 1)
    assert flushed is not None and spec.CrashRestart(flushed, 1, 0, 0) is None
    served = spec.ServeFetch(s1, 2)
    assert served is not None and served.resp == {(2, 1, 0, 0)} and served.leo == s1.leo
    assert spec.ServeFetch(served, 2) is None  # one fetch in flight per follower
    s2 = spec.ApplyFetch(served, 2, 1)
    assert s2 is not None and s2.leo == (1, 1) and not s2.resp
    assert spec.AdvanceHW(s2, 1) is not None
    assert spec.ApplyFetch(served, 2, 0) is not None  # a fetch may stop short of the LEO
    assert spec.ApplyFetch(served, 2, 2) is None  # but never past what was served
    # The leader moves on while the response is in flight: the follower takes the old values.
    late = spec.Append(served)
    assert late is not None
    s2b = spec.ApplyFetch(late, 2, 1)
    assert s2b is not None and s2b.leo == (2, 1)
    assert spec.FollowerFetch(s1, 2) == s2  # the whole fetch at once
    # An election makes the follower leader at its LEO; the old leader, ahead, truncates (the
    # leader epoch protocol), never below its HW, and never by applying a fetch response.
    s3 = spec.ElectLeader(served, 2)
    assert s3 is not None and s3.leader == 2 and s3.epochStart == 0 and not s3.resp
    assert spec.FollowerFetch(s3, 1) is None  # ahead: it must truncate first
    s4 = spec.TruncateFollower(s3, 1, 0)
    assert s4 is not None and s4.leo == (0, 0)
    assert spec.ElectLeader(spec.ShrinkIsr(s1, 2), 2) is None  # only an in-sync replica
    # A crash loses the response in flight to the replica; DropResponse loses it too.
    assert not spec.CrashRestart(served, 2, 0, 0).resp  # type: ignore[union-attr]
    assert spec.DropResponse(served, 2) == s1 and spec.DropResponse(s1, 2) is None


def test_hw_ignoring_the_isr_loses_a_committed_record_on_election() -> None:
    """The bug's end-to-end effect, not only the invariant's first violation: committed offset 0
    is held by the leader alone, and the election of the in-sync follower loses it."""
    spec = LogStartOffsetSpec(LogStartOffsetConfig(bug="HWIgnoresIsr"))
    s = spec.Append(next(iter(spec.init_states())))  # type: ignore[arg-type]
    assert s is not None
    s = spec.AdvanceHW(s, 1)
    assert s is not None and s.committed == 1 and not spec.CommittedDataOnIsr(s)
    s = spec.ElectLeader(s, 2)
    assert s is not None and s.leo[1] < s.committed  # the new leader lacks a committed record
    correct = LogStartOffsetSpec()
    t = correct.Append(next(iter(correct.init_states())))  # type: ignore[arg-type]
    assert t is not None and correct.AdvanceHW(t, 1) is None


def test_counterexample_reads_as_a_story() -> None:
    cfg = SPEC / "LogStartOffset_bug_StartOffsetCheckpointLazy.cfg"
    spec = LogStartOffsetSpec.from_cfg(cfg)
    r = check(spec)
    assert r.violation is not None
    text = r.violation.format(spec)
    # Kafka as shipped: the follower is down (not counted), the leader raises its start offset
    # in memory, acknowledges it, and a crash of the leader brings the deleted record back.
    assert "Invariant NeverServeBelowLogStart is violated after 7 states" in text
    assert "GoDown(2)" in text and "DeleteRecords(1)" in text
    assert "AcknowledgeDeleteRecords" in text
    assert text.rstrip().splitlines()[-4].startswith("State 7: CrashRestart(1)")
    assert "(checkpoint 0)" in text


@pytest.fixture(scope="module")
def z3_encoding():  # type: ignore[no-untyped-def]
    module = load_z3_module("LogStartOffset")
    assert module is not None
    return module


def test_z3_proves_every_invariant_by_induction(z3_encoding) -> None:  # type: ignore[no-untyped-def]
    results = z3_encoding.prove()
    assert [(r.invariant, r.holds) for r in results] == [("NoNewDataDeleted", True),
                                                         ("NeverServeBelowLogStart", True),
                                                         ("CommittedDataOnIsr", True)]


def test_z3_spacer_proves_no_new_data_deleted_alone(z3_encoding) -> None:  # type: ignore[no-untyped-def]
    results = z3_encoding.prove(spacer=True, spacer_invariants=("NoNewDataDeleted",))
    spacer = [r for r in results if "spacer" in r.method]
    assert len(spacer) == 1 and spacer[0].holds, spacer[0].detail


def test_z3_strengthening_is_needed(z3_encoding) -> None:  # type: ignore[no-untyped-def]
    """Without its strengthening the invariant is not inductive: the proof is not vacuous."""
    common = __import__(f"{z3_encoding.__package__}.common", fromlist=["prove_inductive"])
    r = common.prove_inductive(z3_encoding.system(), "NeverServeBelowLogStart", [])
    assert not r.holds and "does not preserve" in r.detail


@pytest.mark.parametrize("bug", BUGS)
def test_z3_finds_each_bug_with_readable_steps(z3_encoding, bug: str) -> None:  # type: ignore[no-untyped-def]
    [r] = z3_encoding.prove(bug)
    assert r.invariant == EXPECTED_VIOLATION[bug]
    assert not r.holds and r.counterexample is not None
    assert r.counterexample[0].startswith("Init: r1 leader: seg 0, start 0")
    # Z3 over unbounded offsets finds a behaviour no longer than TLC's shortest one.
    depth = FIGURES[f"LogStartOffset_bug_{bug}.cfg"]["depth"]
    assert len(r.counterexample) <= depth


def _committed_one(spec: LogStartOffsetSpec) -> LogStartOffsetState:
    """One record on both replicas, committed (HW 1 on the leader, 0 on the follower)."""
    s = spec.Append(next(iter(spec.init_states())))  # type: ignore[arg-type]
    assert s is not None
    s = spec.FollowerFetch(s, 2)
    assert s is not None
    s = spec.AdvanceHW(s, 1)
    assert s is not None and s.hw == (1, 0)
    return s


def test_delete_records_waits_for_a_durable_low_watermark() -> None:
    """The purgatory: accepted at most the HW, one at a time; acknowledged only once every
    counted replica's start offset is durable (AckBeforeDurable: once it is in memory)."""
    spec, buggy = LogStartOffsetSpec(), LogStartOffsetSpec(LogStartOffsetConfig(
        bug="AckBeforeDurable"))
    s = _committed_one(spec)
    assert spec.DeleteRecords(s, 2) is None  # above the HW: OFFSET_OUT_OF_RANGE
    s = spec.DeleteRecords(s, 1)
    assert s is not None and s.pending == 1 and s.logStart == (1, 0) and s.ckptStart == (1, 0)
    assert spec.DeleteRecords(s, 1) is None  # one request at a time
    assert spec.AcknowledgeDeleteRecords(s) is None  # the follower is still at 0
    served = spec.ServeFetch(s, 2)
    assert served is not None
    raised = spec.ApplyFetch(served, 2, 1)
    assert raised is not None and raised.logStart == (1, 1) and raised.ckptStart == (1, 0)
    assert spec.AcknowledgeDeleteRecords(raised) is None  # in memory only: not durable
    early = buggy.AcknowledgeDeleteRecords(raised)
    assert early is not None and early.acked == 1  # the bug acknowledges it now
    lost = buggy.CrashRestart(early, 2, 1, 1)  # and a crash brings the record back
    assert lost is not None and lost.logStart == (1, 0) and 2 in lost.isr
    assert not buggy.NeverServeBelowLogStart(lost)
    durable = spec.CheckpointStartOffset(raised, 2)
    assert durable is not None
    done = spec.AcknowledgeDeleteRecords(durable)
    assert done is not None and done.acked == 1 and done.pending == 0 and done.isrFloor == 1
    again = spec.CrashRestart(done, 2, 1, 1)  # now a crash keeps it
    assert again is not None and again.logStart == (1, 1) and spec.NeverServeBelowLogStart(again)


def test_a_waiting_delete_records_ends_on_timeout_election_or_leader_restart() -> None:
    spec = LogStartOffsetSpec()
    s = spec.DeleteRecords(_committed_one(spec), 1)
    assert s is not None and s.pending == 1
    expired = spec.ExpireDeleteRecords(s)
    assert expired is not None and expired.pending == 0 and expired.acked == 0
    assert spec.ExpireDeleteRecords(expired) is None
    elected = spec.ElectLeader(s, 2)  # NOT_LEADER_OR_FOLLOWER
    assert elected is not None and elected.pending == 0 and elected.isrFloor == 0
    restarted = spec.CrashRestart(s, 1, 1, 1)  # the purgatory is in memory
    assert restarted is not None and restarted.pending == 0 and restarted.isrFloor == 1


def test_a_replica_down_is_not_counted_and_rejoins_the_isr_only_at_the_floor() -> None:
    """Kafka's low watermark leaves out a dead broker's replica; beyond Kafka, it rejoins the
    ISR only once its durable start offset reaches the leader's ISR floor, so an election can
    never bring back what was acknowledged while it was down."""
    spec = LogStartOffsetSpec()
    s = spec.GoDown(_committed_one(spec), 2)
    assert s is not None and s.down == {2} and s.isr == {1}
    assert spec.GoDown(s, 1) is None  # never the leader
    assert spec.ServeFetch(s, 2) is None and spec.ExpandIsr(s, 2) is None
    s = spec.DeleteRecords(s, 1)
    assert s is not None
    s = spec.AcknowledgeDeleteRecords(s)  # the leader alone is counted
    assert s is not None and s.acked == 1 and s.isrFloor == 1
    back = spec.Restart(s, 2, 1, 0)
    assert back is not None and back.down == frozenset() and back.logStart == (1, 0)
    assert 2 not in back.isr and spec.NeverServeBelowLogStart(back)  # it serves nobody
    assert spec.ExpandIsr(back, 2) is None  # caught up (LEO 1 = HW), but below the floor
    t = spec.FollowerFetch(back, 2)
    assert t is not None and t.logStart == (1, 1) and t.ckptStart == (1, 1)
    assert spec.ExpandIsr(t, 2) is not None


def test_the_liveness_cfg_has_tlc_s_figures() -> None:
    cfg = SPEC / "LogStartOffset_liveness.cfg"
    r = check(LogStartOffsetSpec.from_cfg(cfg))
    want = FIGURES[cfg.name]
    assert r.violation is None
    assert (r.distinct, r.generated, r.depth) == (want["distinct"], want["generated"],
                                                  want["depth"])


def test_durable_start_offsets_never_go_backwards() -> None:
    """DurableStartMonotone (a TLC property) on every step of a small model."""
    spec = LogStartOffsetSpec(LogStartOffsetConfig(max_offset=1, segment_size=1))
    steps = 0
    for s in _reachable(spec):
        for _, fn in spec.actions():
            for t in fn(s):
                assert spec.durable_start_monotone(s, t)  # type: ignore[arg-type]
                steps += 1
    assert steps > 10_000
