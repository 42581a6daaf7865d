"""``Cluster.delete_records`` end to end on a simulated cluster (docs/delete-records.md): the
per-partition results, routing to each leader and retrying after a leader change, the gauge
and ListOffsets following the start offset, bad arguments refused before anything is sent."""

from __future__ import annotations

import pytest

from logwright import Cluster
from logwright.broker.metrics import LOG_START_OFFSET
from logwright.cluster import DeleteRecordsResult
from logwright.errors import Errors, InvalidArgument, OffsetOutOfRange
from logwright.identity import TopicPartition


def _cluster(seed: int = 0) -> Cluster:
    c = Cluster.simulated(brokers=3, seed=seed)
    c.create_topic("t", partitions=3, replication_factor=3)
    c.create_topic("c", partitions=1, replication_factor=2, configs={"cleanup.policy": "compact"})
    for p in range(3):
        c.produce("t", p, [b"a", b"b", b"c", b"d"])
    c.produce("c", 0, [b"x"], keys=[b"k"])
    return c


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_result_per_partition_each_from_its_leader(seed: int) -> None:
    c = _cluster(seed)
    got = c.delete_records({("t", 0): 2, ("t", 1): -1, ("t", 2): 9, ("c", 0): 1},
                           timeout_ms=3_000)
    assert list(got) == [("t", 0), ("t", 1), ("t", 2), ("c", 0)]
    assert all(isinstance(r, DeleteRecordsResult) for r in got.values())
    assert (got[("t", 0)].ok, got[("t", 0)].low_watermark) == (True, 2)
    assert (got[("t", 1)].ok, got[("t", 1)].low_watermark) == (True, 4)
    assert (got[("t", 2)].error, got[("t", 2)].low_watermark) == (Errors.OFFSET_OUT_OF_RANGE, -1)
    assert got[("c", 0)].error is Errors.POLICY_VIOLATION and not got[("c", 0)].ok
    assert got[("t", 0)].tp == TopicPartition("t", 0)
    # Every replica holds the new start offsets, and the gauge of each says so.
    for p, lso in ((0, 2), (1, 4), (2, 0)):
        assert c.list_offsets("t", p, "earliest") == lso
        for b in c.brokers:
            part = c.broker(b).replica_manager.partitions[TopicPartition("t", p)]
            assert part.log_start_offset == lso
            assert part.high_watermark >= lso
            assert c.metrics(b)[LOG_START_OFFSET.format("t", p)] == lso
    with pytest.raises(OffsetOutOfRange):
        c.fetch("t", 0, 1)
    assert [r.offset for r in c.fetch("t", 0, 2)] == [2, 3]
    c.close()


def test_a_leader_change_is_retried_on_the_new_leader() -> None:
    """The client's metadata names the old leader, which answers NOT_LEADER_OR_FOLLOWER (or is
    down); the call refreshes its metadata and asks the new one."""
    c = _cluster(4)
    assert c.delete_records({("t", 0): 1})[("t", 0)].ok       # the client knows the leader
    leader = c.controller.partition_state(TopicPartition("t", 0)).leader
    c.crash_broker(leader, power_loss=False)
    result = c.delete_records({("t", 0): 3}, timeout_ms=20_000)[("t", 0)]
    assert (result.ok, result.low_watermark) == (True, 3)
    assert c.controller.partition_state(TopicPartition("t", 0)).leader != leader
    assert c.client.retries > 0
    c.restart_broker(leader)
    parts = c.broker(leader).replica_manager.partitions
    tp = TopicPartition("t", 0)
    # It learns the start offset from its first fetch on its return, after its HW.
    assert c.simulated_world.run_until(
        lambda: tp in parts and parts[tp].log_start_offset == 3, 10_000)
    assert parts[tp].high_watermark >= 3
    c.close()


def test_a_partitioned_follower_in_the_isr_holds_the_answer_until_the_timeout() -> None:
    c = _cluster(5)
    tp = TopicPartition("t", 0)
    leader = c.controller.partition_state(tp).leader
    follower = next(b for b in sorted(c.brokers) if b != leader)
    c.partition_network(leader, follower)
    result = c.delete_records({("t", 0): 2}, timeout_ms=1_000)[("t", 0)]
    assert result.error is Errors.REQUEST_TIMED_OUT and result.low_watermark == -1
    assert c.broker(leader).replica_manager.partitions[tp].log_start_offset == 2
    c.heal_network()
    c.advance_time(35_000)  # the follower's fetch lost in the cut times out, then it fetches
    result = c.delete_records({("t", 0): 2}, timeout_ms=5_000)[("t", 0)]
    assert (result.ok, result.low_watermark) == (True, 2)
    c.close()


def test_unknown_partitions_and_bad_arguments() -> None:
    c = _cluster(6)
    got = c.delete_records({("t", 5): 1, ("nope", 0): 1}, timeout_ms=500)
    assert {k: r.error for k, r in got.items()} == {
        ("t", 5): Errors.UNKNOWN_TOPIC_OR_PARTITION, ("nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    for bad in ({}, {("t", 0): -2}, {("t", 0): "1"}, {("t", -1): 1}, {"t": 1}, [("t", 0)],
                {("t", 0): True}):
        with pytest.raises(InvalidArgument):
            c.delete_records(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        c.delete_records({("t", 0): 1}, timeout_ms=0)
    assert all(c.list_offsets("t", p, "earliest") == 0 for p in range(3))
    c.close()


def test_the_cluster_runs_bookkeeping_and_the_log_start_offset_projection_accept_deletions(
) -> None:
    """The stateful cluster test's steps with DeleteRecords (ClusterRun, every property after
    every step, the LogStartOffset projection mapping each acknowledged answer onto the twin's
    AcknowledgeDeleteRecords), a crash and power loss in the middle included."""
    from logwright.verify.cluster_run import ClusterRun

    run = ClusterRun({"brokers": 3, "seed": 11, "max_delay_ms": 10})
    steps = [
        {"op": "create_topic", "topic": "s", "partitions": 2, "replication_factor": 3},
        {"op": "produce", "topic": "s", "partition": 0, "values": ["a", "b", "c"], "acks": -1},
        {"op": "produce", "topic": "s", "partition": 0, "values": ["d", "e"], "acks": -1},
        {"op": "delete_records", "topic": "s", "partition": 0, "offset": 2},
        {"op": "list_offsets", "topic": "s", "partition": 0, "which": "earliest"},
        {"op": "delete_records", "topic": "s", "partition": 0, "offset": 9},   # above the HW
        {"op": "crash", "broker": 1, "power_loss": False},
        {"op": "produce", "topic": "s", "partition": 0, "values": ["f"], "acks": -1},
        {"op": "delete_records", "topic": "s", "partition": 0, "offset": 4},
        {"op": "crash_during", "broker": 2, "after_ops": 3, "step": {
            "op": "delete_records", "topic": "s", "partition": 0, "offset": 5}},
        {"op": "repair_and_settle"},
        {"op": "fetch", "topic": "s", "partition": 0, "offset": 0},
        {"op": "list_offsets", "topic": "s", "partition": 0, "which": "earliest"},
    ]
    run.check()
    for step in steps:
        run.apply(step)
        run.check()
    book = run.topics["s"]
    assert book.deleted_below[0] >= 4 and book.maybe_deleted_below[0] == 9
    # The deletion with broker 1 down and out of the ISR is acknowledged without it (Kafka's
    # rule); the twin counts every replica, so that answer is not mapped onto it.
    assert run.projection.acks >= 1 and run.projection.acks_unmapped >= 1
    assert run.projection.steps > 0
