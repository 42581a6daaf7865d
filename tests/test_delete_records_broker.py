"""DeleteRecords on the broker (KIP-107), request by request: every error, per partition; the
purgatory (the low watermark, its timeout, leadership lost while waiting); what a follower does
with the leader's start offset (hazards 7 and 8). docs/delete-records.md."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from logwright.broker import AclAuthorizer, AclBinding, Operation, ResourceType
from logwright.broker.authorizer import CLUSTER_NAME
from logwright.errors import Errors
from logwright.protocol import (
    CONSUMER_REPLICA_ID,
    EARLIEST_TIMESTAMP,
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopic,
    FetchPartition,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
)
from logwright.records import build_simple_batch
from logwright.storage.naming import TopicPartition
from logwright.world import Fault
from tests.test_broker_harness import T0, T1, World, fast_config, state

U0 = TopicPartition("u", 0)        # alice may not delete from topic u
C0 = TopicPartition("c", 0)        # cleanup.policy=compact
T2 = TopicPartition("t", 2)        # asked above its high watermark
T3 = TopicPartition("t", 3)        # asked below -1
GONE = TopicPartition("t", 7)      # no such partition here


def acls(_broker_id: int) -> AclAuthorizer:
    return AclAuthorizer([
        AclBinding("User:controller", ResourceType.CLUSTER, CLUSTER_NAME, Operation.CLUSTER_ACTION),
        AclBinding("User:alice", ResourceType.TOPIC, "t", Operation.DELETE),
        AclBinding("User:alice", ResourceType.TOPIC, "c", Operation.DELETE),
        AclBinding("User:alice", ResourceType.TOPIC, "u", Operation.READ),
    ], super_users=["User:ANONYMOUS"])


def send(w: World, broker_id: int, asked: list[tuple[TopicPartition, int]],
         timeout_ms: int = 5_000, principal: str = "User:ANONYMOUS") -> int:
    topics: dict[str, list[DeleteRecordsPartition]] = {}
    for tp, offset in asked:
        topics.setdefault(tp.topic, []).append(DeleteRecordsPartition(tp.partition, offset))
    return w.client.send(broker_id, lambda cid: DeleteRecordsRequest(
        cid, tuple(DeleteRecordsTopic(n, tuple(ps)) for n, ps in topics.items()), timeout_ms,
        principal=principal))


def answer(w: World, cid: int, wait_ms: int = 10_000) -> dict[TopicPartition, tuple[Errors, int]]:
    assert w.run_until(lambda: cid in w.client.responses, wait_ms), "no answer"
    response = w.client.responses[cid]
    assert isinstance(response, DeleteRecordsResponse)
    return {TopicPartition(t.name, p.partition_index): (p.error, p.low_watermark)
            for t in response.topics for p in t.partitions}


def delete(w: World, broker_id: int, asked: list[tuple[TopicPartition, int]],
           timeout_ms: int = 5_000, principal: str = "User:ANONYMOUS"
           ) -> dict[TopicPartition, tuple[Errors, int]]:
    return answer(w, send(w, broker_id, asked, timeout_ms, principal), timeout_ms + 5_000)


def world() -> World:
    w = World(broker_ids=(1, 2), authorizer=acls)
    for tp in (T0, U0, T2, T3):
        w.assign(tp, 1, 1, [1, 2])
    w.assign(T1, 2, 1, [2, 1])
    compact = dataclasses.replace(state(C0, 1, 1, [1, 2]),
                                  topic_configs=(("cleanup.policy", "compact"),))
    for b in (1, 2):
        assert w.lair(b, [compact]).partition_errors[0].error is Errors.NONE
    for tp in (T0, U0, T2, T3, C0):
        w.produce(1, tp, [b"a", b"b", b"c", b"d"])
    return w


EXPECTED = {  # tp: (offset asked, error, low watermark)
    T0: (2, Errors.NONE, 2),
    U0: (1, Errors.TOPIC_AUTHORIZATION_FAILED, -1),
    T1: (1, Errors.NOT_LEADER_OR_FOLLOWER, -1),
    GONE: (1, Errors.UNKNOWN_TOPIC_OR_PARTITION, -1),
    T2: (5, Errors.OFFSET_OUT_OF_RANGE, -1),
    T3: (-2, Errors.OFFSET_OUT_OF_RANGE, -1),
    C0: (1, Errors.POLICY_VIOLATION, -1),
}


@pytest.mark.parametrize("order", list(itertools.permutations(list(EXPECTED)))[::997])
def test_every_partition_of_a_delete_records_gets_its_own_answer(
        order: tuple[TopicPartition, ...]) -> None:
    """Each error Kafka answers, in one request, whatever the order: a refused partition
    changes nothing (its start offset stays 0) and does not hold back the others."""
    w = world()
    got = delete(w, 1, [(tp, EXPECTED[tp][0]) for tp in order], principal="User:alice")
    assert got == {tp: EXPECTED[tp][1:] for tp in order}
    for tp in (U0, T2, T3, C0):
        assert w.partition(1, tp).log_start_offset == 0
    assert w.partition(1, T0).log_start_offset == 2
    assert w.list_offsets(1, T0, EARLIEST_TIMESTAMP) == (Errors.NONE, 2)


def test_minus_one_means_the_high_watermark_and_the_start_offset_never_moves_back() -> None:
    """-1 deletes below the HW; a lower offset afterwards changes nothing and is answered with
    the current low watermark; the offset may equal the HW but not pass it."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a", b"b", b"c"])
    assert w.partition(1, T0).high_watermark == 3
    assert delete(w, 1, [(T0, -1)]) == {T0: (Errors.NONE, 3)}
    assert delete(w, 1, [(T0, 1)]) == {T0: (Errors.NONE, 3)}
    assert w.partition(1, T0).log_start_offset == 3
    w.produce(1, T0, [b"d"])
    assert delete(w, 1, [(T0, 5)]) == {T0: (Errors.OFFSET_OUT_OF_RANGE, -1)}
    assert delete(w, 1, [(T0, 4)]) == {T0: (Errors.NONE, 4)}
    # Consumers and followers are refused below it; the earliest offset is it.
    fetched = w.fetch(1, T0, 3).partitions[0]
    assert (fetched.error, fetched.log_start_offset) == (Errors.OFFSET_OUT_OF_RANGE, 4)
    cid = w.client.send(1, lambda cid: FetchRequest(
        cid, 2, -1, 0, 1, 1 << 20, (FetchPartition(T0, -1, 2, 0, 1 << 20),),
        principal="User:controller"))
    assert w.run_until(lambda: cid in w.client.responses, 2_000)
    follower_fetch = w.client.responses[cid]
    assert isinstance(follower_fetch, FetchResponse)
    assert follower_fetch.partitions[0].error is Errors.OFFSET_OUT_OF_RANGE
    assert w.list_offsets(1, T0, EARLIEST_TIMESTAMP) == (Errors.NONE, 4)
    w.check_offsets()


def test_the_answer_waits_for_the_followers_and_times_out_without_them() -> None:
    """The low watermark counts every ISR member: with the follower down (still in the ISR)
    the leader raises its own start offset at once but answers REQUEST_TIMED_OUT at the
    request's timeout; once the follower fetches again the next request is acknowledged,
    with the follower's start offset raised (durably) first."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a", b"b", b"c", b"d"])
    w.crash_broker(2)
    start = w.clock.now_ms()
    cid = send(w, 1, [(T0, 2)], timeout_ms=700)
    w.run(100)
    assert cid not in w.client.responses                       # waiting in the purgatory
    assert w.partition(1, T0).log_start_offset == 2            # the leader's raised already
    assert answer(w, cid) == {T0: (Errors.REQUEST_TIMED_OUT, -1)}
    assert w.clock.now_ms() - start >= 700
    w.start_broker(2)
    w.assign(T0, 1, 1, [1, 2])
    assert delete(w, 1, [(T0, 3)]) == {T0: (Errors.NONE, 3)}
    follower = w.partition(2, T0).log
    assert follower.log_start_offset == follower.durable_log_start_offset == 3
    assert follower.high_watermark >= follower.log_start_offset


def test_a_follower_out_of_the_isr_on_a_dead_broker_does_not_block() -> None:
    """Kafka's rule: a replica on a broker the metadata says is not live, and not in the
    ISR, is not counted."""
    w = World(broker_ids=(1, 2))                        # broker 3 is down all along
    st = state(T0, 1, 1, [1, 2], [1, 2, 3])
    w.assign(T0, 1, 1, [1, 2], [1, 2, 3])
    w.produce(1, T0, [b"a", b"b", b"c"])
    # The metadata says broker 3 is live: its replica counts, and never reports.
    w.control(1, lambda: w.controller.update_metadata(1, [st], [1, 2, 3]))
    assert delete(w, 1, [(T0, 1)], timeout_ms=500) == {T0: (Errors.REQUEST_TIMED_OUT, -1)}
    w.control(1, lambda: w.controller.update_metadata(1, [st], [1, 2]))
    assert w.brokers[1].replica_manager.metadata.live_brokers == {1, 2}
    assert delete(w, 1, [(T0, 2)], timeout_ms=2_000) == {T0: (Errors.NONE, 2)}


def test_leadership_lost_while_waiting_answers_not_leader() -> None:
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a", b"b", b"c"])
    w.crash_broker(2)
    cid = send(w, 1, [(T0, 2)], timeout_ms=30_000)
    w.run(50)
    assert cid not in w.client.responses
    w.lair(1, [state(T0, 2, 2, [1, 2])])                       # broker 1 is a follower now
    assert answer(w, cid, 1_000) == {T0: (Errors.NOT_LEADER_OR_FOLLOWER, -1)}


def test_a_failed_dir_answers_storage_error_and_changes_nothing_else() -> None:
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.assign(T2, 1, 1, [1, 2])
    for tp in (T0, T2):
        w.produce(1, tp, [b"a", b"b", b"c"])
    dirs = {tp: w.partition(1, tp).log.dir_path.rsplit("/", 1)[0] for tp in (T0, T2)}
    if dirs[T0] == dirs[T2]:
        pytest.skip("both logs on one dir")
    w.fs.inject_fault(w.partition(1, T0).log.dir_path, Fault.EIO)
    got = delete(w, 1, [(T0, 2), (T2, 2)])
    assert got == {T0: (Errors.KAFKA_STORAGE_ERROR, -1), T2: (Errors.NONE, 2)}
    assert delete(w, 1, [(T0, 2)]) == {T0: (Errors.KAFKA_STORAGE_ERROR, -1)}


def test_a_partition_named_twice_takes_its_first_offset() -> None:
    w = World(broker_ids=(1,))
    w.assign(T0, 1, 1, [1])
    w.produce(1, T0, [b"a", b"b", b"c"])
    cid = w.client.send(1, lambda cid: DeleteRecordsRequest(cid, (
        DeleteRecordsTopic("t", (DeleteRecordsPartition(0, 1), DeleteRecordsPartition(0, 3))),),
        1_000))
    assert answer(w, cid) == {T0: (Errors.NONE, 1)}
    assert w.partition(1, T0).log_start_offset == 1


def test_a_partition_named_twice_still_lets_the_partitions_after_it_be_deleted() -> None:
    w = World(broker_ids=(1,))
    for tp in (T0, T1, T2):
        w.assign(tp, 1, 1, [1])
        w.produce(1, tp, [b"a", b"b", b"c"])
    cid = w.client.send(1, lambda cid: DeleteRecordsRequest(cid, (
        DeleteRecordsTopic("t", (DeleteRecordsPartition(0, 1), DeleteRecordsPartition(0, 3),
                                 DeleteRecordsPartition(1, 2), DeleteRecordsPartition(2, 3))),),
        1_000))
    assert answer(w, cid) == {T0: (Errors.NONE, 1), T1: (Errors.NONE, 2), T2: (Errors.NONE, 3)}
    assert [w.partition(1, tp).log_start_offset for tp in (T0, T1, T2)] == [1, 2, 3]


@pytest.mark.parametrize("records", [0, 3])
def test_deleting_below_offset_0_is_allowed_and_deletes_nothing(records: int) -> None:
    """Offset 0 (and -1, the high watermark, on an empty log) is a valid DeleteRecords that
    deletes nothing; only offsets below -1 are out of range."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    if records:
        w.produce(1, T0, [b"x"] * records)
    w.run(1_000)
    assert delete(w, 1, [(T0, 0)]) == {T0: (Errors.NONE, 0)}
    empty = w.partition(1, T0).high_watermark == 0
    if empty:
        assert delete(w, 1, [(T0, -1)]) == {T0: (Errors.NONE, 0)}
    assert delete(w, 1, [(T0, -2)]) == {T0: (Errors.OFFSET_OUT_OF_RANGE, -1)}
    assert w.partition(1, T0).log_start_offset == 0
    assert w.values(1, T0) == w.values(2, T0) and len(w.values(1, T0)) == records


# ---- the follower's side (fetch_adapters.py) -------------------------------------------------


def _follower_world() -> World:
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a", b"b", b"c"])
    w.produce(1, T0, [b"d", b"e", b"f"])
    w.run(1_000)
    return w


def test_a_follower_raises_its_start_offset_only_after_its_high_watermark() -> None:
    """Hazard 8: the leader's start offset in a response is applied after the response's
    HW: a response whose HW and start offset both pass the follower's old HW raises both,
    the start offset never above the HW (with the old HW the raise would stop there)."""
    w = _follower_world()
    rm = w.brokers[2].replica_manager
    log = w.partition(2, T0).log
    log.truncate_to(3)                                   # as if it had only 3 records
    assert (log.log_end_offset, log.high_watermark) == (3, 3)
    records = build_simple_batch([b"d", b"e", b"f"], w.clock.now_ms())
    raw = bytearray(records)
    raw[0:8] = (3).to_bytes(8, "big")                    # base offset 3, as the leader sends
    data = FetchPartitionData(T0, Errors.NONE, high_watermark=6, log_start_offset=5,
                              records=bytes(raw))
    assert rm.fetch_target.process_partition_data(T0, 3, data) == 6
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (5, 6, 6)
    assert log.durable_log_start_offset == 5
    # The leader's start offset above what the follower has: raised to its HW at most.
    data = FetchPartitionData(T0, Errors.NONE, high_watermark=9, log_start_offset=9)
    rm.fetch_target.process_partition_data(T0, 6, data)
    assert (log.log_start_offset, log.high_watermark) == (6, 6)
    w.check_offsets()


def test_a_follower_below_the_leaders_start_offset_restarts_there() -> None:
    """A follower whose end is below the leader's start offset truncates fully and restarts
    at it, HW and start offset together (hazard 8), then catches up."""
    w = _follower_world()
    w.crash_broker(2)
    w.produce(1, T0, [b"g", b"h"], acks=1)
    w.lair(1, [state(T0, 1, 2, [1], [1, 2])])
    w.produce(1, T0, [b"i"], acks=1)
    assert delete(w, 1, [(T0, 9)]) == {T0: (Errors.NONE, 9)}
    w.produce(1, T0, [b"j", b"k"], acks=1)
    w.start_broker(2)
    w.lair(2, [state(T0, 1, 2, [1], [1, 2])])
    assert w.run_until(lambda: w.partition(2, T0).log_end_offset == 11, 10_000)
    log = w.partition(2, T0).log
    assert log.log_start_offset == 9 and log.high_watermark >= 9
    assert w.values(2, T0) == [(9, b"j"), (10, b"k")]
    w.check_offsets()


def test_an_empty_replica_starts_at_the_base_of_the_batch_holding_the_start_offset() -> None:
    """Hazard 7: the start offset points into the middle of a batch; a new replica fetching
    from it gets the whole batch and keeps its start offset, and catches up."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1], [1])
    w.produce(1, T0, [b"a", b"b", b"c", b"d", b"e"], acks=1)   # one batch, offsets 0..4
    w.produce(1, T0, [b"f"], acks=1)
    assert delete(w, 1, [(T0, 3)]) == {T0: (Errors.NONE, 3)}
    w.lair(1, [state(T0, 1, 2, [1], [1, 2])])
    w.lair(2, [state(T0, 1, 2, [1], [1, 2])])
    assert w.run_until(lambda: w.partition(2, T0).log_end_offset == 6, 10_000)
    log = w.partition(2, T0).log
    assert log.log_start_offset == 3 and log.segments[0].base_offset == 0
    assert [o for o, _ in w.values(2, T0)] == [3, 4, 5]
    # It counts in the low watermark and catches up with the next deletion.
    w.assign(T0, 1, 3, [1, 2])
    assert delete(w, 1, [(T0, 5)]) == {T0: (Errors.NONE, 5)}
    assert w.partition(2, T0).log_start_offset == 5


def test_segments_below_the_start_offset_go_on_leader_and_follower_never_at_the_hw() -> None:
    """Hazards 1 and 9: segments wholly below the new start offset are deleted on every
    replica, whatever the cleanup policy (compact,delete here); the segment holding the HW
    stays."""
    tp = TopicPartition("cd", 0)
    w = World(broker_ids=(1, 2))
    st = dataclasses.replace(state(tp, 1, 1, [1, 2]), topic_configs=(
        ("cleanup.policy", "compact,delete"), ("segment.bytes", "200")))
    for b in (1, 2):
        w.lair(b, [st])
    for i in range(12):
        w.produce(1, tp, [b"value-%02d" % i] * 3)
    w.run(1_000)
    before = {b: len(w.partition(b, tp).log.segments) for b in (1, 2)}
    assert min(before.values()) > 3
    assert delete(w, 1, [(tp, 30)]) == {tp: (Errors.NONE, 30)}
    w.run(1_000)
    for b in (1, 2):
        log = w.partition(b, tp).log
        assert log.segments[0].base_offset <= 30 < log.segments[0].next_offset or \
            log.segments[0].base_offset == 30
        assert len(log.segments) < before[b]
        assert log.high_watermark == 36 and log.log_end_offset == 36
    assert next(o for o, _ in w.values(1, tp)) == 30


def test_fetch_answers_below_the_start_offset_carry_it() -> None:
    """A consumer below the start offset gets OFFSET_OUT_OF_RANGE with the start offset, so it
    can reset there."""
    w = World(broker_ids=(1,))
    w.assign(T0, 1, 1, [1])
    w.produce(1, T0, [b"a", b"b", b"c"])
    delete(w, 1, [(T0, 2)])
    for offset in (0, 1):
        data = w.fetch(1, T0, offset).partitions[0]
        assert (data.error, data.log_start_offset, data.high_watermark) == (
            Errors.OFFSET_OUT_OF_RANGE, 2, 3)
    assert [o for o, _ in w.values(1, T0)] == [2]
    assert CONSUMER_REPLICA_ID == -1


@pytest.mark.parametrize("start", [0, 1])
def test_a_follower_parked_in_a_fetch_learns_a_raised_start_offset_at_once(start: int) -> None:
    """KIP-107: a follower's fetch waiting for new records is answered as soon as the
    leader's start offset passes the follower's, so a DeleteRecords completes in the time of
    a round trip, not of replica.fetch.wait.max.ms (here 10 s)."""
    w = World(broker_ids=(1, 2), config=fast_config(replica_fetch_wait_max_ms=10_000,
                                                    replica_socket_timeout_ms=30_000))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a", b"b", b"c", b"d"])
    if start:
        assert delete(w, 1, [(T0, start)]) == {T0: (Errors.NONE, start)}
    w.run(1_000)  # the follower's next fetch is parked at the leader's end
    sent = w.clock.now_ms()
    cid = send(w, 1, [(T0, 3)], timeout_ms=30_000)
    assert answer(w, cid, 2_000) == {T0: (Errors.NONE, 3)}
    assert w.clock.now_ms() - sent < 1_000
    assert w.partition(2, T0).log_start_offset == 3


def test_with_the_lazy_checkpoint_a_deletion_is_acknowledged_on_the_start_offsets_in_memory(
        ) -> None:
    """Kafka's behaviour (``durable_log_start_offset=False``): the raised start offsets are
    written only by the periodic checkpoint (a minute here), and DeleteRecords is answered on
    the start offsets in memory, long before it."""
    base = fast_config()
    config = dataclasses.replace(base, log=dataclasses.replace(
        base.log, durable_log_start_offset=False))
    w = World(broker_ids=(1, 2), config=config)
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a", b"b", b"c", b"d"])
    w.run(1_000)
    sent = w.clock.now_ms()
    cid = send(w, 1, [(T0, 3)], timeout_ms=30_000)
    assert answer(w, cid, 5_000) == {T0: (Errors.NONE, 3)}
    assert w.clock.now_ms() - sent < 5_000
    leader = w.partition(1, T0).log
    assert leader.log_start_offset == 3 and leader.durable_log_start_offset < 3, \
        "not yet checkpointed"
