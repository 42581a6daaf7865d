"""DescribeLogDirs lists the future log of a move (KIP-113) in the dir that holds it: its size,
``is_future``, and as offset lag how far its end offset is behind the current log's (Kafka's
answer). The broker's dir-move engine passes its future logs (``futures``); here they are made
by hand on a simulated disk, so the answer's side is tested on its own."""

from __future__ import annotations

import pytest

from logwright.broker.log_dirs import INVALID_OFFSET_LAG, describe_json, describe_log_dirs
from logwright.errors import Errors
from logwright.identity import TopicPartition
from logwright.protocol import DescribeLogDirsRequest, DescribeLogDirsResponse
from logwright.records import build_simple_batch
from logwright.storage.log import PartitionLog
from tests.test_describe_log_dirs_answers import TID, add_log, manager

TP = TopicPartition("a", 0)


def future_log(lm: object, log_dir: str, tp: TopicPartition, records: int) -> PartitionLog:
    from logwright.logmanager import LogManager

    assert isinstance(lm, LogManager)
    log = PartitionLog.create(lm.fs, f"{log_dir}/{tp.topic}-{tp.partition}.0f-future", tp,
                              lm.config_for(tp.topic), lm.clock, TID)
    for i in range(records):
        log.append_as_leader(build_simple_batch([b"v%d" % i], 1_000_000), 0)
    return log


def rows(answer: DescribeLogDirsResponse) -> dict[str, list[tuple[str, int, bool, int]]]:
    return {r.log_dir: [(t.name, p.partition_index, p.is_future, p.offset_lag)
                        for t in r.topics for p in t.partitions] for r in answer.results}


@pytest.mark.parametrize("copied", [0, 2, 5])
def test_a_future_log_is_listed_in_its_dir_with_its_lag_behind_the_current_log(
        copied: int) -> None:
    lm = manager()
    add_log(lm, "a", 0, "/d1", 5)
    add_log(lm, "b", 0, "/d2", 1)
    future = future_log(lm, "/d2", TP, copied)
    answer = describe_log_dirs(lm, DescribeLogDirsRequest(3), lambda tp: True, {TP: future})
    assert rows(answer) == {"/d1": [("a", 0, False, 0)],
                            "/d2": [("a", 0, True, 5 - copied), ("b", 0, False, 0)],
                            "/d3": []}
    [d2] = [r for r in answer.results if r.log_dir == "/d2"]
    [a] = [t for t in d2.topics if t.name == "a"]
    assert a.partitions[0].partition_size == future.size_bytes
    rendered = describe_json({1: answer})["brokers"][0]["logDirs"][1]["partitions"]
    assert rendered[0] == {"partition": "a-0", "size": future.size_bytes,
                           "offsetLag": 5 - copied, "isFuture": True}


def test_a_future_log_follows_the_request_filter_and_its_dir_state() -> None:
    lm = manager()
    add_log(lm, "a", 0, "/d1", 3)
    future = future_log(lm, "/d3", TP, 1)
    other = describe_log_dirs(lm, DescribeLogDirsRequest(1, (("a", (1,)),)), lambda tp: True,
                              {TP: future})
    assert rows(other) == {"/d1": [], "/d2": [], "/d3": []}
    lm.fail_dir("/d3", "test")
    offline = describe_log_dirs(lm, DescribeLogDirsRequest(2), lambda tp: True, {TP: future})
    assert rows(offline)["/d3"] == [] and [r.error for r in offline.results] == [
        Errors.NONE, Errors.NONE, Errors.KAFKA_STORAGE_ERROR]


def test_a_future_log_without_a_current_log_online_has_no_lag() -> None:
    lm = manager()
    add_log(lm, "a", 0, "/d1", 3)
    future = future_log(lm, "/d2", TP, 1)
    lm.fail_dir("/d1", "test")
    answer = describe_log_dirs(lm, DescribeLogDirsRequest(1), lambda tp: True, {TP: future})
    assert rows(answer)["/d2"] == [("a", 0, True, INVALID_OFFSET_LAG)]
