"""Partition reassignment from Kafka's JSON: every input error, and the whole move end to end.

The test plays the leader: it expands the ISR with AlterPartition as a leader would once a new
replica has caught up, and watches what the controller sends to recording broker endpoints.
"""

from __future__ import annotations

import json

import pytest

from logwright.controller import NotController, ReassignmentError, parse_reassignment
from logwright.controller.reassignment import MAX_REPLICAS
from logwright.errors import Errors
from logwright.protocol.messages import (
    BrokerHeartbeat,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrType,
    PartitionError,
    StopReplicaRequest,
)
from tests.reassign_helpers import POLL_MS, answer_describe, answer_leader_and_isr
from tests.test_controller import SETTLE_MS, Harness, tp


def plan(*partitions: object, version: object = 1) -> str:
    return json.dumps({"version": version, "partitions": list(partitions)})


def entry(topic: str = "t", partition: object = 0, replicas: object = (3, 4),
          log_dirs: object = None) -> dict[str, object]:
    e: dict[str, object] = {"topic": topic, "partition": partition,
                            "replicas": list(replicas) if isinstance(replicas, tuple) else replicas}
    if log_dirs is not None:
        e["log_dirs"] = log_dirs
    return e


@pytest.fixture
def h() -> Harness:
    harness = Harness(brokers=(1, 2, 3, 4))
    harness.start()
    harness.controller.create_topic("t", 2, 2, assignment=[[1, 2], [2, 3]])
    harness.run(SETTLE_MS)
    return harness


# ---- parsing --------------------------------------------------------------------------------

PARSE_ERRORS = [
    # (text, error, path, words in the message)
    ("{", Errors.INVALID_REQUEST, "", "invalid JSON at line 1 column 2"),
    ("[]", Errors.INVALID_REQUEST, "", "top level must be an object"),
    ('{"version": 1, "version": 1, "partitions": []}', Errors.INVALID_REQUEST, "",
     "duplicate key 'version'"),
    ('{"version": NaN, "partitions": []}', Errors.INVALID_REQUEST, "", "NaN is not valid JSON"),
    (json.dumps({"partitions": [entry()]}), Errors.INVALID_REQUEST, "version", "missing"),
    (plan(entry(), version="1"), Errors.INVALID_REQUEST, "version", "must be an integer"),
    (plan(entry(), version=2), Errors.INVALID_REQUEST, "version", "unknown version 2"),
    (json.dumps({"version": 1}), Errors.INVALID_REQUEST, "partitions", "missing"),
    (json.dumps({"version": 1, "partitions": {}}), Errors.INVALID_REQUEST, "partitions",
     "must be a list"),
    (plan(), Errors.INVALID_REQUEST, "partitions", "is empty"),
    (json.dumps({"version": 1, "partitions": [entry()], "extra": 1}), Errors.INVALID_REQUEST,
     "extra", "unknown field"),
    (plan("t-0"), Errors.INVALID_REQUEST, "partitions[0]", "must be an object"),
    (plan({"partition": 0, "replicas": [1]}), Errors.INVALID_REQUEST, "partitions[0].topic",
     "missing"),
    (plan({"topic": "t", "replicas": [1]}), Errors.INVALID_REQUEST, "partitions[0].partition",
     "missing"),
    (plan({"topic": "t", "partition": 0}), Errors.INVALID_REQUEST, "partitions[0].replicas",
     "missing"),
    (plan({**entry(), "log_dir": ["any"]}), Errors.INVALID_REQUEST, "partitions[0].log_dir",
     "unknown field"),
    (plan(entry(topic="a/b")), Errors.INVALID_TOPIC_EXCEPTION, "partitions[0].topic",
     "contains '/'"),
    (plan(entry(partition="0")), Errors.INVALID_REQUEST, "partitions[0].partition",
     "must be an integer, not a string"),
    (plan(entry(partition=True)), Errors.INVALID_REQUEST, "partitions[0].partition",
     "not a boolean"),
    (plan(entry(partition=-1)), Errors.UNKNOWN_TOPIC_OR_PARTITION, "partitions[0].partition",
     "partition -1"),
    (plan(entry(replicas=[])), Errors.INVALID_REQUEST, "partitions[0].replicas", "is empty"),
    (plan(entry(replicas=3)), Errors.INVALID_REQUEST, "partitions[0].replicas",
     "must be a list of broker ids"),
    (plan(entry(replicas=[3, 4, 3])), Errors.INVALID_REQUEST, "partitions[0].replicas[2]",
     "duplicate replica: broker 3"),
    (plan(entry(replicas=[3, -4])), Errors.INVALID_REQUEST, "partitions[0].replicas[1]",
     "negative"),
    (plan(entry(replicas=[3, 4.0])), Errors.INVALID_REQUEST, "partitions[0].replicas[1]",
     "must be an integer, not a number"),
    (plan(entry(replicas=list(range(MAX_REPLICAS + 1)))), Errors.INVALID_REQUEST,
     "partitions[0].replicas", "more than the limit"),
    (plan(entry(log_dirs=["any"])), Errors.INVALID_REQUEST, "partitions[0].log_dirs",
     "has 1 entries but replicas has 2"),
    (plan(entry(log_dirs="any")), Errors.INVALID_REQUEST, "partitions[0].log_dirs",
     "must be a list"),
    (plan(entry(log_dirs=["any", 7])), Errors.INVALID_REQUEST, "partitions[0].log_dirs[1]",
     "not an integer"),
    (plan(entry(log_dirs=["any", "data/d2"])), Errors.INVALID_REQUEST,
     "partitions[0].log_dirs[1]", "neither an absolute path nor \"any\""),
    (plan(entry(), entry(partition=1), entry(replicas=[1])), Errors.INVALID_REQUEST,
     "partitions[2]", "duplicate partition t-0 (also partitions[0])"),
]


@pytest.mark.parametrize(("text", "error", "path", "words"), PARSE_ERRORS)
def test_every_malformed_reassignment_gets_a_precise_error(text: str, error: Errors, path: str,
                                                           words: str) -> None:
    with pytest.raises(ReassignmentError) as info:
        parse_reassignment(text)
    assert info.value.error == error
    assert info.value.path == path
    assert words in info.value.problem, info.value.problem


def test_a_good_reassignment_parses_with_any_for_missing_log_dirs() -> None:
    parsed = parse_reassignment(plan(entry(), entry(partition=1, replicas=(1, 2),
                                                    log_dirs=["/d1", "any"])))
    assert parsed.version == 1
    assert [(m.tp, m.replicas, m.log_dirs) for m in parsed.moves] == [
        (tp("t", 0), (3, 4), ("any", "any")), (tp("t", 1), (1, 2), ("/d1", "any"))]


CLUSTER_ERRORS = [
    (plan(entry(topic="nope")), Errors.UNKNOWN_TOPIC_OR_PARTITION, "partitions[0].topic",
     "topic 'nope' does not exist"),
    (plan(entry(partition=2)), Errors.UNKNOWN_TOPIC_OR_PARTITION, "partitions[0].partition",
     "has 2 partitions; 2 does not exist"),
    (plan(entry(replicas=[3, 9])), Errors.INVALID_REQUEST, "partitions[0].replicas[1]",
     "unknown broker id 9"),
    (plan(entry(log_dirs=["any", "/data/3/d2"])), Errors.LOG_DIR_NOT_FOUND,
     "partitions[0].log_dirs[1]", "broker 4 has no log dir '/data/3/d2'"),
]


@pytest.mark.parametrize(("text", "error", "path", "words"), CLUSTER_ERRORS)
def test_a_reassignment_the_cluster_cannot_honour_is_refused_whole(
        h: Harness, text: str, error: Errors, path: str, words: str) -> None:
    before = h.store.partitions()
    # A good first entry must not be applied when a later one is refused.
    doc = json.loads(text)
    doc["partitions"].insert(0, entry(partition=1, replicas=(3, 4)))
    doc_text = json.dumps(doc)
    with pytest.raises(ReassignmentError) as info:
        h.controller.reassign(doc_text)
    assert info.value.error == error
    assert info.value.path == path.replace("partitions[0]", "partitions[1]")
    assert words in info.value.problem
    assert h.store.partitions() == before and h.store.reassignments() == []


def test_a_partition_already_being_reassigned_is_refused(h: Harness) -> None:
    h.controller.reassign(plan(entry()))
    with pytest.raises(ReassignmentError, match="already being reassigned"):
        h.controller.reassign(plan(entry(replicas=(1, 4))))


def test_only_the_active_controller_reassigns(h: Harness) -> None:
    h.controller.shutdown()
    with pytest.raises(NotController):
        h.controller.reassign(plan(entry()))


# ---- end to end -----------------------------------------------------------------------------


def test_reassignment_end_to_end_moves_leadership_and_removes_the_old_replicas(
        h: Harness) -> None:
    start = h.state("t")
    assert (start.replicas, start.leader) == ((1, 2), 1)
    h.clear()
    assert h.controller.reassign(plan(entry(replicas=(3, 4),
                                            log_dirs=["any", "/data/4/d2"]))) == (tp("t", 0),)
    h.run(SETTLE_MS)
    # Phase 1: the new replicas are added; the leader and ISR stay; the leader epoch moves.
    adding = h.state("t")
    assert adding.replicas == (1, 2, 3, 4) and adding.isr == (1, 2) and adding.leader == 1
    assert (adding.adding_replicas, adding.removing_replicas) == ((3, 4), (1, 2))
    assert adding.leader_epoch == start.leader_epoch + 1
    for b in (1, 2, 3, 4):
        [request] = h.got(b, LeaderAndIsrRequest)
        [wire] = request.partition_states
        assert wire.replicas == (1, 2, 3, 4) and wire.leader_epoch == adding.leader_epoch
        assert wire.is_new == (b in (3, 4))
        assert wire.log_dir == ("/data/4/d2" if b == 4 else "any")
    [status] = h.controller.reassignment_status()
    assert (status.state, status.waiting_for) == ("in progress", (3, 4))
    assert answer_leader_and_isr(h, 1, 2, 3, 4) == 4
    # The leader adds broker 3 to the ISR: not done yet (4 is missing).
    assert h.alter(1, tp(), (1, 2, 3)).error == Errors.NONE
    assert h.state("t").replicas == (1, 2, 3, 4)
    assert h.controller.reassignment_status()[0].waiting_for == (4,)
    assert not any(h.got(b, StopReplicaRequest) for b in (1, 2))
    # Broker 4 caught up too, but has not said where its replica is: not done yet.
    assert h.alter(1, tp(), (1, 2, 3, 4)).error == Errors.NONE
    assert h.state("t").replicas == (1, 2, 3, 4)
    assert [m.state for m in h.controller.reassignment_status()[0].dir_moves] == ["unknown"]
    # Broker 4 reports its replica in the named dir: the controller completes the move.
    h.clear()
    h.run(POLL_MS)  # the controller asks again each poll
    assert answer_describe(h, 4, {tp(): ("/data/4/d2", None)}) >= 1
    h.run(SETTLE_MS)
    done = h.state("t")
    assert done.replicas == (3, 4) and done.isr == (3, 4)
    assert done.leader == 3, "leadership moves to the first target replica in the ISR"
    assert done.leader_epoch == adding.leader_epoch + 1
    assert not done.reassigning and done.log_dir_for(4) == "/data/4/d2"
    assert h.store.reassignments() == [] and h.controller.reassignment_status() == []
    for b in (1, 2):
        [stop] = h.got(b, StopReplicaRequest)
        assert [(p.tp, p.leader_epoch, p.delete_partition) for p in stop.partitions] == [
            (tp(), done.leader_epoch, True)]
    for b in (3, 4):
        [wire] = [s for r in h.got(b, LeaderAndIsrRequest) for s in r.partition_states]
        assert (wire.leader, wire.leader_epoch, wire.replicas) == (3, done.leader_epoch, (3, 4))
    [verified] = h.controller.reassignment_status(plan(entry(replicas=(3, 4))))
    assert verified.state == "complete"
    # The old leader's epoch is fenced: its next AlterPartition is refused.
    assert h.alter(1, tp(), (1, 3, 4), leader_epoch=adding.leader_epoch).error == \
        Errors.FENCED_LEADER_EPOCH


def test_a_reassignment_that_keeps_the_leader_and_only_removes_completes_at_once(
        h: Harness) -> None:
    h.controller.create_topic("w", 1, 3, assignment=[[2, 3, 4]])
    h.run(SETTLE_MS)
    h.clear()
    h.controller.reassign(plan(entry(topic="w", replicas=(2, 4))))
    h.run(SETTLE_MS)
    assert h.state("w").replicas == (2, 3, 4), "waits for the targets to answer"
    answer_leader_and_isr(h, 2, 4)
    done = h.state("w")
    assert (done.replicas, done.isr, done.leader) == ((2, 4), (2, 4), 2)
    [stop] = h.got(3, StopReplicaRequest)
    assert stop.partitions[0].delete_partition
    assert h.store.reassignments() == []


def test_a_new_controller_finishes_a_reassignment_the_old_one_started(h: Harness) -> None:
    h.controller.reassign(plan(entry(replicas=(1, 4))))
    h.run(SETTLE_MS)
    new = h.start_controller(1)
    h.run(SETTLE_MS)
    assert [r.tp for r in h.store.reassignments()] == [tp()]
    assert h.alter(1, tp(), (1, 2, 4)).error == Errors.NONE
    # Answers to the old controller's LeaderAndIsr say nothing to the new one.
    answer_leader_and_isr(h, 1, 4, sent_by="controller-0")
    assert h.state("t").replicas == (1, 2, 4), "the targets have not answered the new controller"
    assert not h.got(2, StopReplicaRequest)
    # The new controller's FULL LeaderAndIsr, sent when it took over, answered.
    answer_leader_and_isr(h, 1, 4, sent_by="controller-1")
    done = h.state("t")
    assert (done.replicas, done.leader) == ((1, 4), 1)
    [stop] = h.got(2, StopReplicaRequest)
    assert stop.controller_epoch == new.epoch


def test_a_target_in_the_isr_counts_only_once_its_broker_answered(h: Harness) -> None:
    """A target replica still counted in the ISR may have lost power (its session has not
    expired): the old replicas stay until its broker answers a LeaderAndIsr sent since the
    reassignment began, from the incarnation registered now, without an error for it."""
    h.controller.create_topic("w", 1, 3, assignment=[[2, 3, 4]])
    h.run(SETTLE_MS)
    answer_leader_and_isr(h, 1, 2, 3, 4)  # before the reassignment: says nothing of it
    h.clear()
    h.controller.reassign(plan(entry(topic="w", replicas=(2, 4))))
    h.run(SETTLE_MS)
    [status] = h.controller.reassignment_status()
    assert (status.state, status.waiting_for) == ("in progress", (2, 4))
    # Broker 4's replica is on a failed dir: that answer does not count.
    answer_leader_and_isr(h, 4, errors={tp("w", 0): Errors.KAFKA_STORAGE_ERROR})
    answer_leader_and_isr(h, 2)
    assert h.state("w").replicas == (2, 3, 4)
    assert h.controller.reassignment_status()[0].waiting_for == (4,)
    assert not h.got(3, StopReplicaRequest)
    # The failed dir took broker 4's replica out of the ISR. Broker 4 restarts with the dir
    # repaired (a new incarnation), answers the FULL LeaderAndIsr it is sent, and catches up.
    assert h.state("w").isr == (2, 3)
    h.register(4)
    answer_leader_and_isr(h, 4)
    assert h.state("w").replicas == (2, 3, 4), "4 answered but is not in the ISR yet"
    assert h.alter(2, tp("w", 0), (2, 3, 4)).error == Errors.NONE
    done = h.state("w")
    assert (done.replicas, done.leader) == ((2, 4), 2)
    [stop] = h.got(3, StopReplicaRequest)
    assert stop.partitions[0].delete_partition


def test_a_late_answer_for_a_deleted_topic_of_the_same_name_does_not_stall_it(
        h: Harness) -> None:
    """traces/regressions/0038: a LeaderAndIsr answer about the deleted generation of a topic
    arrived after the answer about the re-created one and took its place; the reassignment
    then waited for good for a target that had answered."""
    h.clear()
    old_id = h.controller.create_topic("w", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    late = [(src, m) for src, m in h.brokers[1].received if isinstance(m, LeaderAndIsrRequest)]
    assert late and all(s.topic_id == old_id for _, m in late for s in m.partition_states)
    h.controller.delete_topic("w")
    h.run(SETTLE_MS)
    new_id = h.controller.create_topic("w", 1, 3, assignment=[[2, 3, 4]])
    h.run(SETTLE_MS)
    h.controller.reassign(plan(entry(topic="w", replicas=(2, 1))))
    h.run(SETTLE_MS)
    h.brokers[1].received = [(s, m) for s, m in h.brokers[1].received
                             if not any(m is x for _, x in late)]
    answer_leader_and_isr(h, 1, 2, 3, 4)
    assert h.controller.reassignment_status()[0].waiting_for == (1,), "1 is not in the ISR yet"
    # The answer to the deleted topic's request, delayed in the network, comes last.
    for src, request in late:
        assert isinstance(request, LeaderAndIsrRequest)
        h.net.send("broker-1", src, LeaderAndIsrResponse(
            request.correlation_id, Errors.NONE,
            tuple(PartitionError(s.tp, Errors.NONE) for s in request.partition_states)))
    h.run(SETTLE_MS)
    # 1 catches up: the reassignment completes on the answer it gave about the new topic.
    assert h.alter(2, tp("w", 0), (2, 3, 4, 1)).error == Errors.NONE
    done = h.state("w")
    assert (done.replicas, done.leader, done.topic_id) == ((2, 1), 2, new_id)
    assert h.store.reassignments() == []


def test_an_added_replica_is_new_in_the_reassignment_s_first_request_only(h: Harness) -> None:
    """traces/regressions/0052: ``is_new`` tells a broker it may create the replica on any
    online dir while another is offline (it holds no records yet). Only the reassignment's first
    request says so; the probe of a broker reporting an offline dir, the FULL request of its
    next registration and every later request do not (its replica may hold records on the
    offline dir), as Kafka's controller sends isNew only on the NewReplica transition."""
    h.clear()
    h.controller.reassign(plan(entry(replicas=(1, 2, 4))))
    h.run(SETTLE_MS)
    [first] = h.got(4, LeaderAndIsrRequest)
    assert [w.is_new for w in first.partition_states] == [True]
    assert all(not w.is_new for b in (1, 2) for r in h.got(b, LeaderAndIsrRequest)
               for w in r.partition_states)
    assert h.state("t").adding_replicas == (4,)
    h.clear()
    h.send(4, BrokerHeartbeat(h.cid(), 4, h.broker_epoch[4], offline_log_dirs=("/data/4/d1",)))
    h.run(SETTLE_MS)
    h.register(4)
    requests = h.got(4, LeaderAndIsrRequest)
    assert {r.type for r in requests} == {LeaderAndIsrType.INCREMENTAL, LeaderAndIsrType.FULL}
    assert h.state("t").adding_replicas == (4,), "still pending"
    assert [(r.type, w.tp, w.is_new) for r in requests for w in r.partition_states
            if w.tp == tp("t", 0)] == [(r.type, tp("t", 0), False) for r in requests]
