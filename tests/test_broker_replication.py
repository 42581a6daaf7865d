"""Replication between real brokers: acks, the high watermark from the ISR, ISR shrink and
expand, consumer reads, follower truncation by leader epoch (KIP-101/279), and the log start
offset rules a follower follows (hazards 7 and 8)."""

from __future__ import annotations

import pytest

from logwright.errors import Errors
from logwright.protocol import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchPartitionData,
    ProduceRequest,
    StopReplicaPartition,
)
from logwright.records import build_simple_batch, decode_records
from tests.test_broker_harness import T0, T1, World, fast_config, state


def test_acks_all_completes_only_when_the_isr_has_the_records() -> None:
    w = World(broker_ids=(1, 2, 3))
    w.assign(T0, 1, 1, [1, 2, 3])
    response = w.produce(1, T0, [b"a", b"b"])
    assert response.partitions[0].error is Errors.NONE and response.partitions[0].base_offset == 0
    for b in (2, 3):
        assert w.values(b, T0)[:2] == [(0, b"a"), (1, b"b")], "acknowledged before the ISR had it"
    # Cut broker 3 off: acks=all cannot complete while 3 is in the ISR.
    w.network.partition("broker-1", "broker-3")
    cid = w.produce_async(1, T0, [b"c"], acks=-1, timeout_ms=5_000)
    w.run(4_000)
    assert cid not in w.client.responses
    assert w.partition(1, T0).high_watermark == 2 and w.partition(2, T0).log_end_offset == 3
    assert w.run_until(lambda: cid in w.client.responses, 2_000)
    timed_out = w.client.responses[cid]
    assert timed_out.partitions[0].error is Errors.REQUEST_TIMED_OUT  # type: ignore[attr-defined]
    # After replica.lag.time.max.ms the leader shrinks the ISR (AlterPartition) and commits.
    assert w.run_until(lambda: sorted(w.partition(1, T0).isr) == [1, 2], 60_000)
    assert w.partition(1, T0).high_watermark == 3
    assert w.controller.alter_requests[-1].new_isr == (1, 2)
    assert w.brokers[1].snapshot()[
        "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"] == 1
    assert w.produce(1, T0, [b"d"]).partitions[0].error is Errors.NONE
    # Healed, broker 3 catches up (once its lost fetch times out, replica.socket.timeout.ms)
    # and is added back to the ISR.
    w.network.heal()
    assert w.run_until(lambda: sorted(w.partition(1, T0).isr) == [1, 2, 3], 40_000)
    assert w.values(3, T0) == w.values(1, T0)
    w.check_offsets()


def test_acks_one_and_zero_do_not_wait_and_min_isr_refuses_acks_all() -> None:
    w = World(broker_ids=(1, 2), config=fast_config(min_insync_replicas=2))
    w.assign(T0, 1, 1, [1], [1, 2])  # broker 2 is a replica but not in the ISR
    w.network.partition("broker-1", "broker-2")
    one = w.produce(1, T0, [b"a"], acks=1)
    assert one.partitions[0].error is Errors.NONE
    none = w.produce_async(1, T0, [b"b"], acks=0)
    w.run(1_000)
    assert none not in w.client.responses and w.partition(1, T0).log_end_offset == 2
    refused = w.produce(1, T0, [b"c"], acks=-1).partitions[0]
    assert refused.error is Errors.NOT_ENOUGH_REPLICAS
    assert w.partition(1, T0).log_end_offset == 2, "a refused append writes nothing"
    assert w.produce(1, T0, [b"d"], acks=7).partitions[0].error is Errors.INVALID_REQUEST
    for bad, error in ((b"", Errors.INVALID_REQUEST), (b"not a batch", Errors.CORRUPT_MESSAGE)):
        cid = w.client.send(1, lambda cid, bad=bad: ProduceRequest(cid, 1, 1_000, ((T0, bad),)))
        assert w.run_until(lambda cid=cid: cid in w.client.responses, 100)
        assert w.client.responses[cid].partitions[0].error is error  # type: ignore[attr-defined]
    assert w.partition(1, T0).log_end_offset == 2, "bad input appends nothing"


def test_consumers_read_up_to_the_high_watermark_from_the_leader_only() -> None:
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a", b"b"])
    w.network.partition("broker-1", "broker-2")
    w.produce(1, T0, [b"c"], acks=1)  # not committed: broker 2 cannot fetch it
    p = w.partition(1, T0)
    assert (p.high_watermark, p.log_end_offset) == (2, 3)
    data = w.fetch(1, T0, 0).partitions[0]
    assert data.error is Errors.NONE and data.high_watermark == 2
    assert [v for _, r in decode_records(data.records) for v in [r.value]] == [b"a", b"b"]
    assert w.fetch(1, T0, 2).partitions[0].records == b""  # at the HW: nothing yet
    assert w.fetch(1, T0, 4).partitions[0].error is Errors.OFFSET_OUT_OF_RANGE
    assert w.fetch(2, T0, 0).partitions[0].error is Errors.NOT_LEADER_OR_FOLLOWER
    assert w.list_offsets(1, T0, EARLIEST_TIMESTAMP) == (Errors.NONE, 0)
    assert w.list_offsets(1, T0, LATEST_TIMESTAMP) == (Errors.NONE, 2)
    assert w.list_offsets(2, T0, LATEST_TIMESTAMP)[0] is Errors.NOT_LEADER_OR_FOLLOWER
    # Unknown partitions: UNKNOWN_TOPIC_OR_PARTITION, unless the metadata knows the topic.
    other = T0._replace(partition=7)
    assert w.fetch(1, other, 0).partitions[0].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    w.metadata(1, [state(other, 2, 1, [2])])
    assert w.fetch(1, other, 0).partitions[0].error is Errors.NOT_LEADER_OR_FOLLOWER


def test_follower_truncates_uncommitted_records_of_an_old_epoch() -> None:
    """Broker 1 leads epoch 1 and writes records only it has; broker 2 becomes leader at epoch
    2 and writes others at the same offsets. When 1 follows 2 it must drop its own suffix
    (found by OffsetForLeaderEpoch) and take 2's."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    committed = w.produce(1, T0, [b"c0", b"c1", b"c2"])
    assert committed.partitions[0].error is Errors.NONE
    w.run(1_000)  # broker 2 learns the HW
    w.network.partition("broker-1", "broker-2")
    w.produce(1, T0, [b"old3", b"old4"], acks=1)
    w.produce(1, T0, [b"old5"], acks=1)
    assert w.partition(1, T0).log_end_offset == 6
    # Broker 1 "fails": the controller elects 2 (in the ISR) at epoch 2, ISR {2}.
    w.lair(2, [state(T0, 2, 2, [2], [1, 2])])
    assert w.produce(2, T0, [b"new3", b"new4"]).partitions[0].base_offset == 3
    w.network.heal()
    w.lair(1, [state(T0, 2, 2, [2], [1, 2])])
    assert w.run_until(lambda: w.partition(1, T0).log_end_offset == 5
                       and w.values(1, T0) == w.values(2, T0), 10_000)
    assert w.values(1, T0) == [(0, b"c0"), (1, b"c1"), (2, b"c2"), (3, b"new3"), (4, b"new4")]
    entries = [(e.epoch, e.start_offset) for e in w.partition(1, T0).epoch_cache.entries]
    assert entries == [(e.epoch, e.start_offset) for e in w.partition(2, T0).epoch_cache.entries]
    assert entries == [(1, 0), (2, 3)]
    assert w.run_until(lambda: sorted(w.partition(2, T0).isr) == [1, 2], 5_000), "ISR expand"
    w.check_offsets()


def test_truncation_is_by_leader_epoch_not_by_the_high_watermark() -> None:
    """A follower whose HW lags its log end offset keeps every record the new leader has: a
    truncation to the HW would have dropped committed records (KIP-101's data loss)."""
    w = World(broker_ids=(1, 2, 3))
    w.assign(T0, 1, 1, [1, 2, 3])
    w.produce(1, T0, [b"a", b"b", b"c", b"d"])
    # The followers have all four, but their HW lags (it travels on the next fetch answer).
    p3 = w.partition(3, T0)
    assert p3.log_end_offset == 4
    p3.log.update_high_watermark(1)  # as after a restart with an old HW checkpoint
    w.lair(2, [state(T0, 2, 2, [2, 3], [1, 2, 3])])
    truncations = w.brokers[3].replica_manager.truncations
    lowest = [p3.log_end_offset]
    w.controller.leader_and_isr(3, [state(T0, 2, 2, [2, 3], [1, 2, 3])])
    assert w.run_until(lambda: w.brokers[3].replica_manager.truncations > truncations, 5_000,
                       observe=lambda: lowest.append(p3.log_end_offset))
    assert min(lowest) == 4, "records below the new leader's end of epoch 1 were dropped"
    w.produce(2, T0, [b"e"])
    assert w.values(3, T0) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"e")]
    w.check_offsets()


def test_follower_iterates_when_the_leader_lacks_its_epoch() -> None:
    """Follower epochs 1 and 3 (it led epoch 3 alone); the leader has 1 and 2 and leads 4.
    The leader answers epoch 2 for 3; the follower never saw 2, cuts back to the end of its
    epoch 1 and asks again."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a", b"b"])  # epoch 1 at 0..1 on both
    w.network.partition("broker-1", "broker-2")
    w.lair(2, [state(T0, 2, 2, [2], [1, 2])])
    w.produce(2, T0, [b"two2", b"two3"])  # epoch 2 on broker 2 only
    w.lair(1, [state(T0, 1, 3, [1], [1, 2])])
    w.produce(1, T0, [b"three2"])  # epoch 3 on broker 1 only
    w.lair(2, [state(T0, 2, 4, [2], [1, 2])])
    w.produce(2, T0, [b"four4"])
    w.network.heal()
    w.lair(1, [state(T0, 2, 4, [2], [1, 2])])
    assert w.run_until(lambda: w.values(1, T0) == w.values(2, T0), 10_000)
    assert [v for _, v in w.values(1, T0)] == [b"a", b"b", b"two2", b"two3", b"four4"]
    assert [(e.epoch, e.start_offset) for e in w.partition(1, T0).epoch_cache.entries] == \
        [(1, 0), (2, 2), (4, 4)]


def test_new_replica_below_the_leaders_log_start_offset_starts_at_it() -> None:
    """hazards 7 and 8: the leader's start offset points into the middle of its first batch; a
    new, empty replica is out of range, restarts empty at the leader's start offset, takes the
    first batch at its own base offset, and never has HW below its start offset."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1])
    w.produce(1, T0, [b"a", b"b", b"c", b"d", b"e"])  # one batch, offsets 0..4
    w.produce(1, T0, [b"f", b"g"])
    leader = w.partition(1, T0)
    assert leader.log.increment_log_start_offset(2)  # as DeleteRecords(2) would
    w.lair(1, [state(T0, 1, 2, [1], [1, 2])])
    w.lair(2, [state(T0, 1, 2, [1], [1, 2])])
    follower = w.partition(2, T0)
    observed: list[tuple[int, int, int]] = []
    assert w.run_until(lambda: follower.log_end_offset == 7 and follower.high_watermark == 7,
                       10_000, observe=lambda: observed.append(
                           (follower.log_start_offset, follower.high_watermark,
                            follower.log_end_offset)))
    assert all(0 <= lso <= hw <= leo for lso, hw, leo in observed)
    assert follower.log_start_offset == 2
    assert [v for _, v in w.values(2, T0)] == [b"c", b"d", b"e", b"f", b"g"]
    assert w.run_until(lambda: sorted(leader.isr) == [1, 2], 5_000)
    # The follower becomes leader: its HW is at least its start offset, reads start there.
    w.lair(2, [state(T0, 2, 3, [2], [1, 2])])
    assert w.list_offsets(2, T0, EARLIEST_TIMESTAMP) == (Errors.NONE, 2)
    assert w.fetch(2, T0, 1).partitions[0].error is Errors.OFFSET_OUT_OF_RANGE
    w.check_offsets()


def test_follower_raises_its_start_offset_only_after_its_high_watermark() -> None:
    """hazard 8's order: append, HW = min(leader HW, own LEO), then the start offset, capped
    by the HW. The answer here carries a leader start offset above the leader HW it reports."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a", b"b", b"c", b"d"])
    w.network.partition("broker-1", "broker-2")
    target = w.brokers[2].replica_manager.fetch_target
    follower = w.partition(2, T0)
    batch = build_simple_batch([b"e", b"f"], 0, base_offset=4, partition_leader_epoch=1)
    next_offset = target.process_partition_data(
        T0, 4, FetchPartitionData(T0, Errors.NONE, high_watermark=5, log_start_offset=6,
                                  records=batch))
    assert next_offset == 6
    assert (follower.log_start_offset, follower.high_watermark, follower.log_end_offset) == \
        (5, 5, 6)


@pytest.mark.parametrize("ending", ["a newer epoch", "deleted", "stopped"])
def test_waiting_acks_all_ends_when_this_leader_epoch_ends(ending: str) -> None:
    """The wait is for the leader epoch the produce was appended at: the same broker leading
    again at a newer epoch, or the replica stopped or deleted, answers it at once."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.network.partition("broker-1", "broker-2")
    cid = w.produce_async(1, T0, [b"x"], acks=-1, timeout_ms=30_000)
    w.run(100)
    assert cid not in w.client.responses
    if ending == "a newer epoch":
        w.lair(1, [state(T0, 1, 2, [1, 2])])
    else:
        w.stop(1, [StopReplicaPartition(T0, 1, ending == "deleted")])
    assert w.run_until(lambda: cid in w.client.responses, 100)
    result = w.client.responses[cid].partitions[0]  # type: ignore[attr-defined]
    assert result.error is Errors.NOT_LEADER_OR_FOLLOWER
    assert w.brokers[1].replica_manager.produce_purgatory.watched(T0) == 0


def test_waiting_acks_all_fails_fast_when_leadership_moves() -> None:
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.network.partition("broker-1", "broker-2")
    cid = w.produce_async(1, T0, [b"x"], acks=-1, timeout_ms=30_000)
    w.run(100)
    assert cid not in w.client.responses
    assert w.brokers[1].replica_manager.produce_purgatory.watched(T0) == 1
    w.lair(1, [state(T0, 2, 2, [2], [1, 2])])  # broker 1 becomes a follower
    assert w.run_until(lambda: cid in w.client.responses, 100)
    result = w.client.responses[cid].partitions[0]  # type: ignore[attr-defined]
    assert result.error is Errors.NOT_LEADER_OR_FOLLOWER
    assert w.brokers[1].replica_manager.produce_purgatory.watched(T0) == 0


def test_acks_all_over_two_partitions_answers_when_the_slower_one_is_replicated() -> None:
    """One produce, two partitions with different followers: t-0's is cut off, t-1's is not.
    t-1 is replicated first; once the cut heals and t-0 is replicated too, the answer comes
    then, for both, not at the request's timeout."""
    # The follower's fetch lost in the cut is sent again after replica.socket.timeout.ms.
    w = World(broker_ids=(1, 2, 3), config=fast_config(replica_socket_timeout_ms=2_000))
    w.assign(T0, 1, 1, [1, 2])
    w.assign(T1, 1, 1, [1, 3])
    w.network.partition("broker-1", "broker-2")
    records = build_simple_batch([b"x"], w.clock.now_ms())
    # t-1, replicated first, comes first in the request.
    cid = w.client.send(1, lambda c: ProduceRequest(c, -1, 60_000, ((T1, records),
                                                                    (T0, records))))
    assert w.run_until(lambda: w.partition(1, T1).high_watermark == 1, 2_000)
    assert cid not in w.client.responses, "t-0 is not replicated yet"
    w.network.heal()
    assert w.run_until(lambda: w.partition(1, T0).high_watermark == 1, 10_000)
    assert w.run_until(lambda: cid in w.client.responses, 100), "answered only at its timeout"
    answer = w.client.responses[cid]
    assert [(p.tp, p.error) for p in answer.partitions] == [  # type: ignore[attr-defined]
        (T1, Errors.NONE), (T0, Errors.NONE)]
