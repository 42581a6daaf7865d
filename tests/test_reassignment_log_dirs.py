"""A reassignment's log dirs (KIP-113), the controller's side: which AlterReplicaLogDirs it
sends, how it learns a move is done (DescribeLogDirs), its retries, its status, that a pure dir
move bumps no leader epoch, and that a bad request changes nothing.

The brokers are recording endpoints (tests/test_controller.py); the test plays their answers
(tests/reassign_helpers.py), so each test states exactly which broker behaviour it assumes.
"""

from __future__ import annotations

import json

import pytest

from logwright.controller import ReassignmentError
from logwright.controller.dir_moves import DirMoveStatus
from logwright.errors import Errors
from logwright.identity import TopicPartition
from logwright.protocol.messages import (
    AlterReplicaLogDirsPartitionResult,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirsTopicResult,
    DescribeLogDirsRequest,
    LeaderAndIsrRequest,
    StopReplicaRequest,
)
from tests.reassign_helpers import POLL_MS, answer_alter, answer_describe, answer_leader_and_isr
from tests.test_controller import SETTLE_MS, Harness, tp

D1, D2 = "/data/{}/d1", "/data/{}/d2"


def plan(*entries: dict[str, object]) -> str:
    return json.dumps({"version": 1, "partitions": list(entries)})


def entry(replicas: list[int], log_dirs: list[str] | None = None, topic: str = "t",
          partition: int = 0) -> dict[str, object]:
    e: dict[str, object] = {"topic": topic, "partition": partition, "replicas": replicas}
    if log_dirs is not None:
        e["log_dirs"] = log_dirs
    return e


@pytest.fixture
def h() -> Harness:
    harness = Harness(brokers=(1, 2, 3))
    harness.start()
    harness.controller.create_topic("t", 2, 2, assignment=[[1, 2], [2, 3]])
    harness.run(SETTLE_MS)
    return harness


def asked(h: Harness, broker_id: int) -> list[tuple[str, str]]:
    return [(f"{t.name}-{p}", d.path) for r in h.got(broker_id, AlterReplicaLogDirsRequest)
            for d in r.dirs for t in d.topics for p in t.partitions]


# ---- a move on the same broker ----------------------------------------------------------------


def test_a_same_broker_dir_move_bumps_no_leader_epoch_and_waits_for_the_move(h: Harness) -> None:
    before = h.state("t")
    h.clear()
    h.controller.reassign(plan(entry([1, 2], [D2.format(1), "any"])))
    h.run(SETTLE_MS)
    pending = h.state("t")
    assert (pending.leader_epoch, pending.isr, pending.leader) == (
        before.leader_epoch, before.isr, before.leader)
    assert pending.partition_epoch == before.partition_epoch + 1
    assert pending.log_dir_for(1) == D2.format(1) and not pending.reassigning
    # The replicas hear the new dirs with the SAME leader epoch; broker 1 is asked to move.
    for b in (1, 2):
        for r in h.got(b, LeaderAndIsrRequest):
            assert all(w.leader_epoch == before.leader_epoch for w in r.partition_states)
    assert asked(h, 1) == [("t-0", D2.format(1))] and asked(h, 2) == []
    assert h.got(1, DescribeLogDirsRequest) and not h.got(2, DescribeLogDirsRequest)
    [status] = h.controller.reassignment_status()
    assert status.state == "in progress" and status.waiting_for == ()
    assert [(m.broker, m.target_dir, m.state) for m in status.dir_moves] == [
        (1, D2.format(1), "unknown")]
    # The broker copies into a future log: still in progress.
    answer_alter(h, 1)
    answer_describe(h, 1, {tp(): (D1.format(1), D2.format(1))})
    [status] = h.controller.reassignment_status()
    assert [m.state for m in status.moves_in_progress] == ["in progress"]
    assert h.store.reassignments() and asked(h, 1) == [], "heading for its dir: not asked again"
    # The swap happened: complete, and still no new leader epoch, no StopReplica.
    h.run(POLL_MS)
    answer_describe(h, 1, {tp(): (D2.format(1), None)})
    done = h.state("t")
    assert h.store.reassignments() == [] and h.controller.reassignment_status() == []
    assert (done.leader_epoch, done.isr, done.replicas) == (
        before.leader_epoch, before.isr, before.replicas)
    assert not any(h.got(b, StopReplicaRequest) for b in (1, 2, 3))
    [verified] = h.controller.reassignment_status(plan(entry([1, 2], [D2.format(1), "any"])))
    assert verified.state == "complete"




def test_each_partition_of_a_brokers_answers_is_taken_on_its_own(h: Harness) -> None:
    """Broker 2 moves its replicas of t-0 and t-1, broker 1 its replica of t-0. Broker 2's
    answers to AlterReplicaLogDirs list first a partition the controller never asked about,
    then t-0 refused, t-1 accepted: each answer lands on its own move, the stranger is
    ignored. DescribeLogDirs answers likewise, each about its own broker's moves, a move
    already complete passed over and the ones after it still read."""
    h.clear()
    h.controller.reassign(plan(entry([1, 2], [D2.format(1), D2.format(2)]),
                               entry([2, 3], [D2.format(2), "any"], partition=1)))
    h.run(SETTLE_MS)
    assert sorted(asked(h, 2)) == [("t-0", D2.format(2)), ("t-1", D2.format(2))]
    requests = [(s, m) for s, m in h.brokers[2].received
                if isinstance(m, AlterReplicaLogDirsRequest)]
    h.brokers[2].received = [(s, m) for s, m in h.brokers[2].received
                             if not isinstance(m, AlterReplicaLogDirsRequest)]
    refused = {0: Errors.KAFKA_STORAGE_ERROR, 1: Errors.NONE}
    for src, request in requests:
        asked_here = [p for d in request.dirs for t in d.topics for p in t.partitions]
        h.net.send("broker-2", src, AlterReplicaLogDirsResponse(request.correlation_id, (
            AlterReplicaLogDirsTopicResult("t", (
                AlterReplicaLogDirsPartitionResult(9, Errors.NONE),
                *(AlterReplicaLogDirsPartitionResult(p, refused[p]) for p in asked_here))),)))
    h.run(SETTLE_MS)
    answer_alter(h, 1)
    t0, t1 = tp("t", 0), tp("t", 1)

    def moves() -> dict[tuple[TopicPartition, int], DirMoveStatus]:
        return {(m.tp, m.broker): m for s in h.controller.reassignment_status()
                for m in s.dir_moves}

    assert set(moves()) == {(t0, 1), (t0, 2), (t1, 2)}, "each move names its own partition"
    assert moves()[(t0, 2)].error == "KAFKA_STORAGE_ERROR"
    assert moves()[(t1, 2)].error is None
    answer_describe(h, 2, {t0: (D2.format(2), None), t1: (D1.format(2), D2.format(2))})
    answer_describe(h, 1, {t0: (D1.format(1), D2.format(1))})  # t-1 is no move of broker 1's
    assert moves()[(t0, 2)].state == "complete"
    assert moves()[(t0, 1)].state == moves()[(t1, 2)].state == "in progress"
    h.run(POLL_MS)
    answer_describe(h, 2, {t0: (D2.format(2), None), t1: (D2.format(2), None)})
    assert (t1, 2) not in moves(), "read past t-0's move, complete already: t-1 is done"
    answer_describe(h, 1, {t0: (D2.format(1), None)})
    assert h.store.reassignments() == []

def test_a_replica_already_in_its_dir_completes_on_the_first_answer(h: Harness) -> None:
    before = h.state("t")
    h.controller.reassign(plan(entry([1, 2], [D1.format(1), D2.format(2)])))
    h.run(SETTLE_MS)
    answer_describe(h, 1, {tp(): (D1.format(1), None)})
    assert h.store.reassignments(), "broker 2 has not answered yet"
    answer_describe(h, 2, {tp(): (D2.format(2), None)})
    assert h.store.reassignments() == []
    assert h.state("t").leader_epoch == before.leader_epoch


def test_a_reassignment_that_changes_nothing_writes_no_partition_state(h: Harness) -> None:
    before = h.state("t")
    h.clear()
    h.controller.reassign(plan(entry([1, 2])))
    h.run(SETTLE_MS)
    assert h.state("t") == before and h.store.reassignments() == []
    assert not any(h.got(b, LeaderAndIsrRequest) for b in (1, 2, 3))


# ---- retries ----------------------------------------------------------------------------------


@pytest.mark.parametrize("where, state", [
    ((D1, None), "not moving"),          # the broker forgot the choice (a restart), or lost it
    ((D1, "/data/{}/d3"), "moving elsewhere"),  # someone else's move
    ((None, None), "missing"),           # not created yet, or on an offline dir
])
def test_a_replica_not_heading_for_its_dir_is_asked_again_each_answer(
        h: Harness, where: tuple[str | None, str | None], state: str) -> None:
    h.controller.reassign(plan(entry([1, 2], [D2.format(1), "any"])))
    h.run(SETTLE_MS)
    assert answer_alter(h, 1, Errors.REPLICA_NOT_AVAILABLE) == [("t-0", D2.format(1))]
    [status] = h.controller.reassignment_status()
    assert status.dir_moves[0].error == "REPLICA_NOT_AVAILABLE"
    current, future = (w.format(1) if w else None for w in where)
    for _ in range(3):
        answer_describe(h, 1, {tp(): (current, future)},
                        dirs=(D1.format(1), D2.format(1), "/data/1/d3"))
        assert asked(h, 1) == [("t-0", D2.format(1))]
        answer_alter(h, 1, Errors.KAFKA_STORAGE_ERROR)
        [status] = h.controller.reassignment_status()
        assert (status.dir_moves[0].state, status.dir_moves[0].error) == (
            state, "KAFKA_STORAGE_ERROR")
        h.run(POLL_MS)
    assert h.store.reassignments(), "never complete while the replica is not in its dir"
    answer_describe(h, 1, {tp(): (D2.format(1), None)})
    assert h.store.reassignments() == []


def test_the_controller_keeps_asking_a_broker_that_does_not_answer(h: Harness) -> None:
    h.controller.reassign(plan(entry([1, 2], [D2.format(1), "any"])))
    h.run(SETTLE_MS)
    first = len(h.got(1, DescribeLogDirsRequest))
    h.run(5 * POLL_MS)
    later = len(h.got(1, DescribeLogDirsRequest))
    assert first >= 1 and later >= first + 4, "one DescribeLogDirs per poll"
    assert later <= first + 6, "and no more"
    answer_describe(h, 1, {tp(): (D2.format(1), None)})
    assert h.store.reassignments() == []
    h.clear()
    h.run(3 * POLL_MS)
    assert not h.got(1, DescribeLogDirsRequest), "the poll stops once nothing is moving"


def test_a_dead_broker_is_not_asked_and_its_move_waits(h: Harness) -> None:
    h.stop_heartbeats(1)
    h.run(10_000)  # the session times out
    assert 1 not in h.controller.live_brokers()
    h.clear()
    h.controller.reassign(plan(entry([1, 2], [D2.format(1), "any"])))
    h.run(3 * POLL_MS)
    assert not h.got(1, AlterReplicaLogDirsRequest) and not h.got(1, DescribeLogDirsRequest)
    assert h.store.reassignments()
    assert h.register(1).error == Errors.NONE  # back: asked again
    h.run(POLL_MS)
    answer_describe(h, 1, {tp(): (D2.format(1), None)})
    assert h.store.reassignments() == []


# ---- a move to a new broker ---------------------------------------------------------------------


def test_a_new_replica_with_a_named_dir_waits_for_both_the_isr_and_its_dir(h: Harness) -> None:
    h.clear()
    h.controller.reassign(plan(entry([1, 3], ["any", D2.format(3)])))
    h.run(SETTLE_MS)
    [wire] = [s for r in h.got(3, LeaderAndIsrRequest) for s in r.partition_states]
    assert wire.is_new and wire.log_dir == D2.format(3)
    # Asked before it exists: REPLICA_NOT_AVAILABLE (the broker remembers the choice).
    assert asked(h, 3) == [("t-0", D2.format(3))]
    answer_alter(h, 3, Errors.REPLICA_NOT_AVAILABLE)
    answer_describe(h, 3, {tp(): (D2.format(3), None)})  # created in its dir, not caught up
    assert h.store.reassignments() and h.state("t").replicas == (1, 2, 3)
    assert h.alter(1, tp(), (1, 2, 3)).error == Errors.NONE  # caught up
    h.run(SETTLE_MS)
    assert h.state("t").replicas == (1, 2, 3), "no target has answered a LeaderAndIsr yet"
    answer_leader_and_isr(h, 1, 3)  # complete
    done = h.state("t")
    assert done.replicas == (1, 3) and done.log_dir_for(3) == D2.format(3)
    assert h.store.reassignments() == []


def test_a_new_controller_resumes_the_moves_the_old_one_asked_for(h: Harness) -> None:
    before = h.state("t")
    h.controller.reassign(plan(entry([1, 2], [D2.format(1), D1.format(2)])))
    h.run(SETTLE_MS)
    answer_describe(h, 2, {tp(): (D1.format(2), None)})  # broker 2's is done
    h.clear()
    new = h.start_controller(1)
    h.run(SETTLE_MS)
    assert asked(h, 1) == [("t-0", D2.format(1))] and asked(h, 2) == [("t-0", D1.format(2))]
    answer_describe(h, 1, {tp(): (D2.format(1), None)})
    assert h.store.reassignments(), "the new controller has not heard from broker 2 yet"
    answer_describe(h, 2, {tp(): (D1.format(2), None)})
    assert h.store.reassignments() == [] and new.active
    assert h.state("t").leader_epoch == before.leader_epoch


# ---- bad requests change nothing ----------------------------------------------------------------


@pytest.mark.parametrize("bad, error, words", [
    (entry([1, 2], ["any"]), Errors.INVALID_REQUEST, "log_dirs must parallel replicas"),
    (entry([1, 2], ["any", "data/d2"]), Errors.INVALID_REQUEST, "neither an absolute path"),
    (entry([1, 9], ["any", "any"]), Errors.INVALID_REQUEST, "unknown broker id 9"),
    (entry([1, 2], ["/data/1/d3", "any"]), Errors.LOG_DIR_NOT_FOUND, "broker 1 has no log dir"),
    (entry([1, 2], ["any", D1.format(1)]), Errors.LOG_DIR_NOT_FOUND, "broker 2 has no log dir"),
])
def test_a_bad_reassignment_gets_one_error_and_changes_nothing(
        h: Harness, bad: dict[str, object], error: Errors, words: str) -> None:
    good = entry([2, 3], ["any", D2.format(3)], partition=1)
    states = [h.state("t", 0), h.state("t", 1)]
    h.clear()
    with pytest.raises(ReassignmentError) as caught:
        h.controller.reassign(plan(good, bad))
    assert caught.value.error == error and words in str(caught.value)
    h.run(3 * POLL_MS)
    assert [h.state("t", 0), h.state("t", 1)] == states and h.store.reassignments() == []
    assert not any(h.got(b, kind) for b in (1, 2, 3)
                   for kind in (LeaderAndIsrRequest, AlterReplicaLogDirsRequest,
                                DescribeLogDirsRequest))


def test_a_controller_that_stops_stops_asking(h: Harness) -> None:
    h.controller.reassign(plan(entry([1, 2], [D2.format(1), "any"])))
    h.run(SETTLE_MS)
    old = h.controller
    old.shutdown()
    h.clear()
    h.run(3 * POLL_MS)
    assert h.sent_by(old.node_id) == 0
    assert h.store.reassignments(), "the pending reassignment stays for the next controller"


def test_a_large_reassignment_asks_each_broker_about_each_partition_once() -> None:
    h = Harness(brokers=(1, 2))
    h.start()
    h.controller.create_topic("big", 40, 2, assignment=[[1, 2]] * 40)
    h.run(SETTLE_MS)
    h.clear()
    h.controller.reassign(plan(*(entry([1, 2], [D2.format(1), "any"], topic="big", partition=p)
                                 for p in range(40))))
    h.run(SETTLE_MS)
    named = [p for r in h.got(1, DescribeLogDirsRequest) for _, ps in r.topics or ()
             for p in ps]
    assert sorted(named) == list(range(40)), "each partition asked about once at the start"
    assert sorted(p for _, p in [(t, int(t.rsplit("-", 1)[1])) for t, _ in asked(h, 1)]) == \
        list(range(40))
    h.clear()
    h.run(POLL_MS)
    [poll] = h.got(1, DescribeLogDirsRequest)  # then one request per poll for all of them
    assert poll.topics == (("big", tuple(range(40))),)
    answer_describe(h, 1, {tp("big", p): (D2.format(1), None) for p in range(40)})
    assert h.store.reassignments() == []
