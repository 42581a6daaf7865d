"""DescribeLogDirs answers every online dir in full and each partition and stray on its own.

``describe_log_dirs`` over a real log manager on a simulated disk: an offline dir does not end
the answer, a partition or stray left out by the request's filter does not hide the ones after
it, a hosted replica's offset lag is 0 and a log the broker does not host as a replica -1, a
stray without a topic id shows Uuid.ZERO, a stray never checked again shows -1, a dir whose
disk usage cannot be read shows -1 bytes. ``describe_json`` renders each field as
``kafka-log-dirs.sh`` does. Over a simulated cluster: the broker answers the asker, with its
correlation id, the principals its ACLs allow.
"""

from __future__ import annotations

import random

import pytest

from logwright.broker.authorizer import CLUSTER_NAME, AclBinding, Operation, ResourceType
from logwright.broker.log_dirs import INVALID_OFFSET_LAG, describe_json, describe_log_dirs
from logwright.cluster import Cluster
from logwright.errors import Errors
from logwright.identity import TopicPartition, Uuid
from logwright.logmanager import LogManager, LogManagerConfig
from logwright.protocol import DescribeLogDirsRequest, DescribeLogDirsResponse
from logwright.protocol.effects import Send
from logwright.protocol.messages import (
    DescribeLogDirsPartition,
    DescribeLogDirsResult,
    DescribeLogDirsStray,
    DescribeLogDirsTopic,
)
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.world import Fault, SimFileSystem, SimScheduler, VirtualClock

MIN = 60_000
TID = Uuid.from_random(random.Random(11))
DIRS = ("/d1", "/d2", "/d3")


def manager(retention_ms: int = 60 * MIN) -> LogManager:
    clock = VirtualClock(1_000_000)
    fs = SimFileSystem(clock)
    config = LogManagerConfig(log=LogConfig(retention_ms=retention_ms),
                              retention_check_interval_ms=MIN, initial_task_delay_ms=0,
                              orphan_partition_removal_delay_ms=10 * MIN)
    lm = LogManager(fs, list(DIRS), clock, SimScheduler(clock, seed=1), config,
                    random.Random(1))
    lm.startup()
    return lm


def add_log(lm: LogManager, topic: str, partition: int, log_dir: str, records: int,
            topic_id: Uuid | None = TID) -> None:
    log = lm.create_log(TopicPartition(topic, partition), topic_id, log_dir)
    for i in range(records):
        log.append_as_leader(build_simple_batch([b"v%d" % i], 1_000_000), 0)
    log.update_high_watermark(log.log_end_offset)


def listed(answer: DescribeLogDirsResponse) -> dict[str, list[tuple[str, int]]]:
    return {r.log_dir: [(t.name, p.partition_index) for t in r.topics for p in t.partitions]
            for r in answer.results}


def strays_listed(answer: DescribeLogDirsResponse) -> dict[str, list[tuple[str, int]]]:
    return {r.log_dir: [(s.topic, s.partition) for s in r.strays] for r in answer.results}


@pytest.mark.parametrize("offline", DIRS)
def test_an_offline_dir_answers_a_storage_error_and_the_other_dirs_are_answered(
        offline: str) -> None:
    lm = manager()
    for i, d in enumerate(DIRS):
        add_log(lm, "a", i, d, 3)
    lm.fail_dir(offline, "test")
    answer = describe_log_dirs(lm, DescribeLogDirsRequest(7), lambda tp: True)
    assert answer.correlation_id == 7 and answer.error is Errors.NONE
    assert [r.log_dir for r in answer.results] == list(DIRS)
    for i, (r, d) in enumerate(zip(answer.results, DIRS, strict=True)):
        if d == offline:
            assert r.error is Errors.KAFKA_STORAGE_ERROR and r.topics == () and r.strays == ()
        else:
            assert r.error is Errors.NONE
            assert listed(answer)[d] == [("a", i)]
            assert r.total_bytes > 0 and 0 <= r.usable_bytes <= r.total_bytes


@pytest.mark.parametrize("wanted", [[1], [2], [1, 2], [0, 2], [3]])
def test_only_the_partitions_asked_for_are_listed_whatever_their_order(wanted: list[int]) -> None:
    lm = manager()
    for p in range(3):
        add_log(lm, "a", p, "/d1", 1)
    add_log(lm, "b", 0, "/d1", 1)
    request = DescribeLogDirsRequest(1, (("a", tuple(wanted)),))
    answer = describe_log_dirs(lm, request, lambda tp: True)
    assert listed(answer)["/d1"] == [("a", p) for p in wanted if p < 3]


@pytest.mark.parametrize("wanted", [[1], [2], [1, 2], [0]])
def test_only_the_strays_asked_for_are_listed_whatever_their_order(wanted: list[int]) -> None:
    lm = manager()
    for p in range(3):
        add_log(lm, "s", p, "/d2", 2)
        assert lm.mark_stray(TopicPartition("s", p), "test") is not None
    request = DescribeLogDirsRequest(1, (("s", tuple(wanted)),))
    answer = describe_log_dirs(lm, request, lambda tp: True)
    assert strays_listed(answer)["/d2"] == [("s", p) for p in wanted]
    everything = describe_log_dirs(lm, DescribeLogDirsRequest(2), lambda tp: True)
    assert strays_listed(everything)["/d2"] == [("s", 0), ("s", 1), ("s", 2)]


@pytest.mark.parametrize("records", [0, 1, 5])
def test_a_hosted_replica_has_lag_0_and_a_log_not_hosted_lag_minus_1(records: int) -> None:
    lm = manager()
    add_log(lm, "a", 0, "/d1", records)
    add_log(lm, "a", 1, "/d1", records)
    hosted = TopicPartition("a", 0)
    answer = describe_log_dirs(lm, DescribeLogDirsRequest(1), lambda tp: tp == hosted)
    (topic,) = answer.results[0].topics
    lags = {p.partition_index: p.offset_lag for p in topic.partitions}
    assert lags == {0: 0, 1: INVALID_OFFSET_LAG}
    sizes = {p.partition_index: p.partition_size for p in topic.partitions}
    log = lm.get_log(hosted)
    assert log is not None and sizes[0] == log.size_bytes and (sizes[0] > 0) == (records > 0)


def test_a_strays_topic_id_and_next_check_are_shown_or_their_unknown_values() -> None:
    lm = manager(retention_ms=-1)  # infinite retention: orphan removal never checks again
    add_log(lm, "s", 0, "/d1", 2, topic_id=TID)
    add_log(lm, "s", 1, "/d1", 2, topic_id=None)
    for p in (0, 1):
        assert lm.mark_stray(TopicPartition("s", p), "test") is not None
    answer = describe_log_dirs(lm, DescribeLogDirsRequest(1), lambda tp: True)
    by_partition = {s.partition: s for s in answer.results[0].strays}
    assert by_partition[0].topic_id == TID and by_partition[1].topic_id == Uuid.ZERO
    for s in by_partition.values():
        assert s.last_decision == "" and s.next_check_ms == s.since_ms + 10 * MIN
    lm.full_request_applied = True
    lm.clock.advance(11 * MIN)  # type: ignore[attr-defined]
    lm.run_orphan_removal()
    answer = describe_log_dirs(lm, DescribeLogDirsRequest(2), lambda tp: True)
    for s in answer.results[0].strays:
        assert "infinite" in s.last_decision and s.next_check_ms == -1


def test_a_dir_whose_disk_usage_cannot_be_read_shows_minus_1_bytes() -> None:
    lm = manager()
    add_log(lm, "a", 0, "/d2", 1)
    fs = lm.fs
    assert isinstance(fs, SimFileSystem)
    fs.inject_fault("/d2", Fault.EIO)
    answer = describe_log_dirs(lm, DescribeLogDirsRequest(1), lambda tp: True)
    fs.clear_fault("/d2")
    by_dir = {r.log_dir: r for r in answer.results}
    assert (by_dir["/d2"].total_bytes, by_dir["/d2"].usable_bytes) == (-1, -1)
    assert by_dir["/d2"].error is Errors.NONE and listed(answer)["/d2"] == [("a", 0)]
    assert by_dir["/d1"].total_bytes > 0 and by_dir["/d1"].usable_bytes >= 0


def _stray(topic_id: Uuid, decision: str, next_check: int) -> DescribeLogDirsStray:
    return DescribeLogDirsStray("s-0.x-stray", "s", 0, topic_id, 5, 10, decision, next_check)


@pytest.mark.parametrize(("stray", "expected"), [
    (_stray(TID, "deferred: x", 0), {"topicId": str(TID), "lastDecision": "deferred: x",
                                     "nextCheck": 0}),
    (_stray(TID, "deferred: x", 1234), {"topicId": str(TID), "lastDecision": "deferred: x",
                                        "nextCheck": 1234}),
    (_stray(Uuid.ZERO, "", -1), {"topicId": None, "lastDecision": None, "nextCheck": None}),
])
def test_describe_json_renders_each_stray_field(stray: DescribeLogDirsStray,
                                                expected: dict[str, object]) -> None:
    answer = DescribeLogDirsResponse(1, Errors.NONE, (DescribeLogDirsResult(
        "/d1", Errors.NONE, (DescribeLogDirsTopic("a", (DescribeLogDirsPartition(0, 9, 0),)),),
        100, 50, (stray,)),))
    rendered = describe_json({3: answer})
    (broker,) = rendered["brokers"]
    assert broker == {"broker": 3, "logDirs": [{
        "logDir": "/d1", "error": None,
        "partitions": [{"partition": "a-0", "size": 9, "offsetLag": 0, "isFuture": False}],
        "totalBytes": 100, "usableBytes": 50,
        "strays": [{"name": "s-0.x-stray", "partition": "s-0", "since": 5, "size": 10,
                    **expected}]}]}


@pytest.mark.parametrize("error", [Errors.NONE, Errors.CLUSTER_AUTHORIZATION_FAILED])
def test_describe_json_names_a_brokers_error_only_when_there_is_one(error: Errors) -> None:
    results = () if error is not Errors.NONE else (
        DescribeLogDirsResult("/d1", Errors.NONE), DescribeLogDirsResult(
            "/d2", Errors.KAFKA_STORAGE_ERROR))
    rendered = describe_json({1: DescribeLogDirsResponse(4, error, results),
                              2: DescribeLogDirsResponse(5, Errors.NONE, ())})
    first, second = rendered["brokers"]
    assert "error" not in second
    if error is Errors.NONE:
        assert "error" not in first
        assert [d["error"] for d in first["logDirs"]] == [None, "KAFKA_STORAGE_ERROR"]
    else:
        assert first["error"] == error.name and first["logDirs"] == []


def test_the_broker_answers_the_asker_for_the_principals_its_acls_allow() -> None:
    cluster = Cluster.simulated(brokers=1, log_dirs_per_broker=2, seed=5)
    cluster.create_topic("t", 2, 1)
    cluster.produce("t", 0, [b"x"] * 3)
    broker = cluster.broker(1)

    def ask(cid: int, principal: str) -> DescribeLogDirsResponse:
        effects = broker.handle("client-x", DescribeLogDirsRequest(cid, None, principal))
        (send,) = [e for e in effects if isinstance(e, Send)]
        assert send.dst == "client-x"
        assert isinstance(send.message, DescribeLogDirsResponse)
        assert send.message.correlation_id == cid
        return send.message

    open_answer = ask(10, "User:anyone")
    lags = [p.offset_lag for r in open_answer.results for t in r.topics for p in t.partitions]
    assert open_answer.error is Errors.NONE and lags == [0, 0], "both partitions hosted"
    broker.authorizer.add_acl(AclBinding("User:admin", ResourceType.CLUSTER, CLUSTER_NAME,
                                         Operation.DESCRIBE))
    for cid, principal, allowed in [(11, "User:admin", True), (12, "User:mallory", False),
                                    (13, "User:admin", True)]:
        answer = ask(cid, principal)
        if allowed:
            assert answer.error is Errors.NONE and len(answer.results) == 2
        else:
            assert answer.error is Errors.CLUSTER_AUTHORIZATION_FAILED and answer.results == ()
    cluster.close()
