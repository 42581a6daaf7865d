"""Time retention in the fuzzed cluster (logwright.verify.cluster_run): the run's bookkeeping
lets retention delete an acknowledged record only once the record is older than the topic's
retention.ms, and only as a prefix of the log; every younger acknowledged record is still
promised to every reader."""

from __future__ import annotations

from logwright.identity import Uuid
from logwright.verify.cluster_run import ClusterRun, TopicBook
from logwright.verify.stateful_cluster import CLUSTER


def _book(acked_ms: dict[int, int]) -> TopicBook:
    book = TopicBook(Uuid.ZERO, 1)
    for offset, ms in acked_ms.items():
        book.acked[0][offset] = f"v{offset}".encode()
        book.acked_ms[0][offset] = ms
    return book


def test_without_a_finite_retention_nothing_is_given_up() -> None:
    book = _book({0: 0, 1: 10})
    book.retained_at(10**9)
    assert book.maybe_deleted_below[0] == 0 and set(book.promised(0)) == {0, 1}
    assert book.earliest_at_most(0) == 0


def test_records_older_than_the_cutoff_may_go_as_a_prefix_only() -> None:
    # Offset 2 is young though 3 is old: a segment holding 2 is kept, so is all above it.
    book = _book({0: 100, 1: 200, 2: 900, 3: 150, 4: 950})
    book.retention_ms = 500
    book.retained_at(1_000)  # cutoff 500
    assert book.maybe_deleted_below[0] == 2
    assert set(book.promised(0)) == {2, 3, 4} and book.earliest_at_most(0) == 2
    book.retained_at(1_420)  # cutoff 920: only 4 (950) is young
    assert book.maybe_deleted_below[0] == 4 and set(book.promised(0)) == {4}


def test_when_every_record_is_old_all_may_go_and_the_floor_never_comes_back() -> None:
    book = _book({0: 100, 1: 200})
    book.retention_ms = 50
    book.retained_at(1_000)
    assert book.maybe_deleted_below[0] == 2 and not book.promised(0)
    assert book.earliest_at_most(0) is None  # unacknowledged records may have gone too
    book.acked[0][2], book.acked_ms[0][2] = b"young", 1_000
    book.retained_at(1_010)
    assert set(book.promised(0)) == {2} and book.earliest_at_most(0) == 2
    book.retention_ms = 10**9  # a longer one later does not bring anything back
    book.retained_at(1_020)
    assert book.maybe_deleted_below[0] == 2


def test_a_run_with_retention_deletes_old_records_and_keeps_promising_young_ones() -> None:
    run = ClusterRun(CLUSTER)
    run.apply({"op": "create_topic", "topic": "s", "partitions": 1, "replication_factor": 3})
    for i in range(3):
        run.apply({"op": "produce", "topic": "s", "partition": 0, "values": [f"old-{i}"],
                   "acks": -1})
    run.apply({"op": "alter_configs", "topic": "s", "set": {"segment.bytes": 200},
               "delete": []})
    for i in range(3):
        run.apply({"op": "produce", "topic": "s", "partition": 0, "values": [f"mid-{i}" * 30],
                   "acks": -1})
    run.apply({"op": "alter_configs", "topic": "s", "set": {"retention.ms": 20_000},
               "delete": []})
    run.apply({"op": "advance", "ms": 70_000})
    run.apply({"op": "produce", "topic": "s", "partition": 0, "values": ["young"], "acks": -1})
    run.apply({"op": "settle"})
    run.check()
    start = run.cluster.list_offsets("s", 0, "earliest")
    assert start > 0, "retention deleted nothing: the test shows nothing"
    book = run.topics["s"]
    assert book.maybe_deleted_below[0] >= start
    young = max(book.acked[0])
    assert young in book.promised(0)
    run.apply({"op": "list_offsets", "topic": "s", "partition": 0, "which": "earliest"})
    run.cluster.close()
