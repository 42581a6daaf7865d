"""Topic identity on one broker, request by request (docs/topic-identity.md, issue 10): control
request versions, StopReplica and LeaderAndIsr of another topic id, FULL LeaderAndIsr stray
detection, revival, and topic ids on fetch and produce. The cluster scenarios are in
tests/test_topic_identity.py.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from logwright.broker.strays import full_request_strays
from logwright.errors import Errors
from logwright.identity import TopicPartition, Uuid
from logwright.protocol import (
    CONSUMER_REPLICA_ID,
    EARLIEST_TIMESTAMP,
    EPOCH_DURING_DELETE,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrType,
    MetadataRequest,
    ProduceRequest,
    ProduceResponse,
    StopReplicaPartition,
    StopReplicaRequest,
    StopReplicaResponse,
)
from logwright.protocol.messages import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopic,
    LeaderAndIsrPartitionState,
    ListOffsetsRequest,
    ListOffsetsResponse,
    Message,
)
from logwright.records import build_simple_batch
from tests.test_broker_harness import T0, T1, TOPIC_ID, World, state

OTHER_ID = Uuid.from_random(random.Random(8))
T2 = TopicPartition("u", 0)


def send_control(w: World, broker_id: int, request: Message) -> Message:
    """Deliver a control request built by hand (its correlation id chosen by the test, so an
    old one can arrive late) and wait for its answer."""
    w.network.send(w.controller.node_id, f"broker-{broker_id}", request)
    cid = request.correlation_id
    assert w.run_until(lambda: cid in w.controller.responses, 2_000), "no answer"
    return w.controller.responses.pop(cid)


def lair(w: World, broker_id: int, cid: int, states: list[LeaderAndIsrPartitionState],
         full: bool = False, controller_epoch: int = 1) -> LeaderAndIsrResponse:
    kind = LeaderAndIsrType.FULL if full else LeaderAndIsrType.INCREMENTAL
    response = send_control(w, broker_id, LeaderAndIsrRequest(
        cid, 1, controller_epoch, w.controller.broker_epochs[broker_id], kind, tuple(states)))
    assert isinstance(response, LeaderAndIsrResponse)
    return response


def stop(w: World, broker_id: int, cid: int, parts: list[StopReplicaPartition]
         ) -> StopReplicaResponse:
    response = send_control(w, broker_id, StopReplicaRequest(
        cid, 1, 1, w.controller.broker_epochs[broker_id], tuple(parts)))
    assert isinstance(response, StopReplicaResponse)
    return response


def errors(response: LeaderAndIsrResponse | StopReplicaResponse) -> dict[TopicPartition, Errors]:
    return {e.tp: e.error for e in response.partition_errors}


def strays_of(w: World, broker_id: int) -> list[tuple[TopicPartition, Uuid | None]]:
    return [(s.tp, s.topic_id) for s in w.brokers[broker_id].log_manager.stray_logs()]


def one_broker_with(values: list[bytes]) -> World:
    """Broker 1 leads t-0 (TOPIC_ID) holding ``values``, and t-1."""
    w = World(broker_ids=(1,))
    assert lair(w, 1, 1000, [state(T0, 1, 1, [1]), state(T1, 1, 1, [1])]).error is Errors.NONE
    assert w.produce(1, T0, values).partitions[0].error is Errors.NONE
    return w


# ---- StopReplica --------------------------------------------------------------------------------


@pytest.mark.parametrize("delete", [True, False])
def test_stop_replica_of_another_topic_id_changes_nothing(delete: bool) -> None:
    """As the LeaderAndIsr answer of Kafka for a log of another id: INCONSISTENT_TOPIC_ID, and
    the log (of the current generation) is neither stopped nor deleted."""
    w = one_broker_with([b"a", b"b"])
    before = w.values(1, T0)
    r = stop(w, 1, 1001, [StopReplicaPartition(T0, EPOCH_DURING_DELETE, delete, OTHER_ID)])
    assert errors(r) == {T0: Errors.INCONSISTENT_TOPIC_ID}
    assert w.partition(1, T0).is_leader and w.values(1, T0) == before
    assert w.produce(1, T0, [b"c"]).partitions[0].error is Errors.NONE
    # The right id (or none, an older controller) does stop it.
    r = stop(w, 1, 1002, [StopReplicaPartition(T0, EPOCH_DURING_DELETE, delete, TOPIC_ID)])
    assert errors(r) == {T0: Errors.NONE}
    assert (T0 in w.brokers[1].replica_manager.partitions) is not delete


# ---- versions -----------------------------------------------------------------------------------


def test_a_leader_and_isr_older_than_an_applied_stop_replica_changes_nothing() -> None:
    """The network delivers a LeaderAndIsr sent before the topic's deletion after the
    deletion's StopReplica: it must not re-create the replica."""
    w = one_broker_with([b"a"])
    r = stop(w, 1, 2000, [StopReplicaPartition(T0, EPOCH_DURING_DELETE, True, TOPIC_ID)])
    assert errors(r) == {T0: Errors.NONE}
    late = lair(w, 1, 1500, [state(T0, 1, 2, [1])])
    assert errors(late) == {T0: Errors.STALE_CONTROLLER_EPOCH}
    assert T0 not in w.brokers[1].replica_manager.partitions
    assert w.brokers[1].log_manager.get_log(T0) is None
    # A duplicate of the applied StopReplica is harmless; a newer LeaderAndIsr applies.
    assert errors(stop(w, 1, 2000, [StopReplicaPartition(T0, EPOCH_DURING_DELETE, True,
                                                         TOPIC_ID)])) == {T0: Errors.NONE}
    assert errors(lair(w, 1, 2500, [state(T0, 1, 3, [1])])) == {T0: Errors.NONE}
    assert w.partition(1, T0).leader_epoch == 3


def test_a_stop_replica_older_than_an_applied_leader_and_isr_changes_nothing() -> None:
    w = one_broker_with([b"a"])
    assert errors(lair(w, 1, 3000, [state(T0, 1, 2, [1])])) == {T0: Errors.NONE}
    r = stop(w, 1, 2999, [StopReplicaPartition(T0, EPOCH_DURING_DELETE, True, TOPIC_ID)])
    assert errors(r) == {T0: Errors.STALE_CONTROLLER_EPOCH}
    assert w.values(1, T0) == [(0, b"a")]
    # Versions are per partition name: t-1 is not held back by t-0's.
    r = stop(w, 1, 2998, [StopReplicaPartition(T1, EPOCH_DURING_DELETE, True, TOPIC_ID)])
    assert errors(r) == {T1: Errors.NONE}


# ---- LeaderAndIsr of another topic id -----------------------------------------------------------


def test_leader_and_isr_of_another_topic_id_sets_the_old_log_aside_and_creates_the_new() -> None:
    w = one_broker_with([b"old-1", b"old-2"])
    r = lair(w, 1, 1001, [replace(state(T0, 1, 0, [1]), topic_id=OTHER_ID, is_new=True)])
    assert errors(r) == {T0: Errors.NONE}
    part = w.partition(1, T0)
    assert part.topic_id == OTHER_ID and part.log.topic_id == OTHER_ID
    assert w.values(1, T0) == [], "the new generation starts empty"
    assert strays_of(w, 1) == [(T0, TOPIC_ID)]
    assert w.produce(1, T0, [b"new"]).partitions[0].error is Errors.NONE
    assert w.values(1, T0) == [(0, b"new")]
    # The old generation's data is kept whole in the stray dir, never served.
    stray = w.brokers[1].log_manager.stray_logs()[0]
    assert stray.name.endswith("-stray") and w.fs.exists(stray.path)


def test_a_log_of_another_id_loaded_at_start_up_is_set_aside_too() -> None:
    w = one_broker_with([b"old"])
    w.crash_broker(1)
    w.start_broker(1)
    assert w.brokers[1].log_manager.get_log(T0) is not None  # loaded, not yet a partition
    r = lair(w, 1, 1001, [replace(state(T0, 1, 0, [1]), topic_id=OTHER_ID, is_new=True)])
    assert errors(r) == {T0: Errors.NONE}
    assert w.partition(1, T0).topic_id == OTHER_ID and w.values(1, T0) == []
    assert strays_of(w, 1) == [(T0, TOPIC_ID)]


# ---- FULL LeaderAndIsr --------------------------------------------------------------------------


def test_full_leader_and_isr_sets_aside_what_it_does_not_assign_before_serving() -> None:
    w = one_broker_with([b"a", b"b"])
    assert errors(lair(w, 1, 1001, [state(T2, 1, 1, [1])])) == {T2: Errors.NONE}
    lm = w.brokers[1].log_manager
    assert not lm.full_request_applied
    r = lair(w, 1, 1002, [state(T0, 1, 2, [1]), replace(state(T2, 1, 2, [1]), topic_id=OTHER_ID)],
             full=True)
    assert errors(r) == {T0: Errors.NONE, T2: Errors.NONE}
    assert lm.full_request_applied
    hosted = w.brokers[1].replica_manager.partitions
    assert set(hosted) == {T0, T2}
    assert hosted[T2].topic_id == OTHER_ID, "u-0 of another id: replaced by the new generation"
    assert sorted(strays_of(w, 1), key=str) == sorted([(T1, TOPIC_ID), (T2, TOPIC_ID)], key=str)
    assert w.values(1, T0) == [(0, b"a"), (1, b"b")], "what the request assigns is untouched"
    fetched = w.fetch(1, T1, 0).partitions[0]
    assert fetched.error is Errors.UNKNOWN_TOPIC_OR_PARTITION, "a stray is never served"


def test_a_full_leader_and_isr_older_than_an_applied_request_keeps_what_it_created() -> None:
    """A FULL request built before an INCREMENTAL one that created u-0 arrives after it: u-0
    is newer news than the FULL request and stays."""
    w = one_broker_with([b"a"])
    assert errors(lair(w, 1, 1005, [state(T2, 1, 1, [1])])) == {T2: Errors.NONE}
    r = lair(w, 1, 1004, [state(T0, 1, 1, [1]), state(T1, 1, 1, [1])], full=True)
    assert errors(r) == {T0: Errors.NONE, T1: Errors.NONE}
    assert T2 in w.brokers[1].replica_manager.partitions and strays_of(w, 1) == []
    # An older FULL still after that one decides nothing at all.
    r = lair(w, 1, 1003, [state(T2, 1, 1, [1])], full=True)
    assert set(errors(r).values()) == {Errors.STALE_CONTROLLER_EPOCH}
    assert set(w.brokers[1].replica_manager.partitions) == {T0, T1, T2} and strays_of(w, 1) == []


def test_a_delayed_full_leader_and_isr_of_an_old_controller_changes_nothing() -> None:
    w = one_broker_with([b"a"])
    w.controller.controller_epoch = 2
    assert errors(lair(w, 1, 1, [state(T0, 1, 2, [1], controller_epoch=2)],
                       controller_epoch=2)) == {T0: Errors.NONE}
    late = lair(w, 1, 9999, [], full=True, controller_epoch=1)
    assert late.error is Errors.STALE_CONTROLLER_EPOCH
    assert set(w.brokers[1].replica_manager.partitions) == {T0, T1} and strays_of(w, 1) == []
    assert not w.brokers[1].log_manager.full_request_applied


def test_full_leader_and_isr_leaves_logs_of_an_offline_dir_alone() -> None:
    w = one_broker_with([b"a"])
    lm = w.brokers[1].log_manager
    held = lm.dir_of(T0)
    assert held is not None
    lm.fail_dir(held.path, "test: disk gone")
    r = lair(w, 1, 1001, [], full=True)
    assert r.error is Errors.NONE
    assert lm.get_log(T0) is not None and lm.get_log(T0) in held.logs.values()
    assert all(s.log_dir != held.path for s in lm.stray_logs())


# ---- revival ------------------------------------------------------------------------------------


@pytest.mark.parametrize("is_new", [True, False])
def test_a_stray_assigned_back_under_its_id_is_revived_from_its_data(is_new: bool) -> None:
    w = one_broker_with([b"a", b"b", b"c"])
    assert errors(lair(w, 1, 1001, [state(T1, 1, 1, [1])], full=True)) == {T1: Errors.NONE}
    assert strays_of(w, 1) == [(T0, TOPIC_ID)]
    r = lair(w, 1, 1002, [replace(state(T0, 2, 5, [2, 1]), is_new=is_new)])
    assert errors(r) == {T0: Errors.NONE}
    assert w.values(1, T0) == [(0, b"a"), (1, b"b"), (2, b"c")], "its own data, not re-fetched"
    assert strays_of(w, 1) == []
    assert w.partition(1, T0).topic_id == TOPIC_ID


def test_a_stray_of_another_id_is_not_revived() -> None:
    w = one_broker_with([b"a"])
    assert errors(lair(w, 1, 1001, [state(T1, 1, 1, [1])], full=True)) == {T1: Errors.NONE}
    r = lair(w, 1, 1002, [replace(state(T0, 1, 1, [1]), topic_id=OTHER_ID, is_new=True)])
    assert errors(r) == {T0: Errors.NONE}
    assert w.values(1, T0) == [] and strays_of(w, 1) == [(T0, TOPIC_ID)]


# ---- fetch and produce --------------------------------------------------------------------------


def fetch_with_id(w: World, tp: TopicPartition, topic_id: Uuid) -> Errors:
    cid = w.client.send(1, lambda cid: FetchRequest(
        cid, CONSUMER_REPLICA_ID, -1, 0, 1, 1 << 20,
        (FetchPartition(tp, -1, 0, -1, 1 << 20, topic_id=topic_id),)))
    assert w.run_until(lambda: cid in w.client.responses, 2_000)
    response = w.client.responses[cid]
    assert isinstance(response, FetchResponse)
    return response.partitions[0].error


def produce_with_id(w: World, tp: TopicPartition, topic_id: Uuid) -> Errors:
    batch = build_simple_batch([b"x"], w.clock.now_ms())
    cid = w.client.send(1, lambda cid: ProduceRequest(cid, 1, 5_000, ((tp, batch),),
                                                      topic_ids=((tp.topic, topic_id),)))
    assert w.run_until(lambda: cid in w.client.responses, 2_000)
    response = w.client.responses[cid]
    assert isinstance(response, ProduceResponse)
    return response.partitions[0].error


def test_fetch_and_produce_check_the_topic_id_they_name() -> None:
    w = one_broker_with([b"a"])
    assert fetch_with_id(w, T0, TOPIC_ID) is Errors.NONE
    assert fetch_with_id(w, T0, Uuid.ZERO) is Errors.NONE  # an older version: no id
    assert fetch_with_id(w, T0, OTHER_ID) is Errors.INCONSISTENT_TOPIC_ID
    assert fetch_with_id(w, T2, OTHER_ID) is Errors.UNKNOWN_TOPIC_ID
    assert produce_with_id(w, T0, OTHER_ID) is Errors.INCONSISTENT_TOPIC_ID
    assert produce_with_id(w, T2, OTHER_ID) is Errors.UNKNOWN_TOPIC_ID
    assert w.values(1, T0) == [(0, b"a")]
    assert produce_with_id(w, T0, TOPIC_ID) is Errors.NONE
    assert w.values(1, T0) == [(0, b"a"), (1, b"x")]


def delete_records_with_id(w: World, tp: TopicPartition, offset: int,
                           topic_id: Uuid) -> Errors:
    cid = w.client.send(1, lambda cid: DeleteRecordsRequest(
        cid, (DeleteRecordsTopic(tp.topic, (DeleteRecordsPartition(tp.partition, offset),)),),
        5_000, topic_ids=((tp.topic, topic_id),) if topic_id != Uuid.ZERO else ()))
    assert w.run_until(lambda: cid in w.client.responses, 2_000)
    response = w.client.responses[cid]
    assert isinstance(response, DeleteRecordsResponse)
    return response.topics[0].partitions[0].error


def test_delete_records_checks_the_topic_id_it_names() -> None:
    """A DeleteRecords meant for another generation of the name (the log here is a deleted
    one's, its StopReplica not arrived) deletes nothing: INCONSISTENT_TOPIC_ID, which the client
    retries at the generation's own leader; without an id (Kafka's request) the name decides."""
    w = one_broker_with([b"a", b"b", b"c"])
    assert delete_records_with_id(w, T0, 1, OTHER_ID) is Errors.INCONSISTENT_TOPIC_ID
    assert delete_records_with_id(w, T2, 1, OTHER_ID) is Errors.UNKNOWN_TOPIC_ID
    assert w.partition(1, T0).log_start_offset == 0
    assert delete_records_with_id(w, T0, 1, TOPIC_ID) is Errors.NONE
    assert w.partition(1, T0).log_start_offset == 1
    assert delete_records_with_id(w, T0, 2, Uuid.ZERO) is Errors.NONE
    assert w.partition(1, T0).log_start_offset == 2


def list_offsets_with_id(w: World, tp: TopicPartition, topic_id: Uuid) -> tuple[Errors, int]:
    cid = w.client.send(1, lambda cid: ListOffsetsRequest(
        cid, CONSUMER_REPLICA_ID, ((tp, EARLIEST_TIMESTAMP),),
        topic_ids=((tp.topic, topic_id),) if topic_id != Uuid.ZERO else ()))
    assert w.run_until(lambda: cid in w.client.responses, 2_000)
    response = w.client.responses[cid]
    assert isinstance(response, ListOffsetsResponse)
    _, error, offset = response.partitions[0]
    return error, offset


def test_list_offsets_checks_the_topic_id_it_names() -> None:
    """traces/regressions/0032: a ListOffsets meant for another generation of the name (the
    log here is a deleted one's, with its own start offset) is refused, INCONSISTENT_TOPIC_ID,
    which the client retries at the generation's own leader, instead of a start offset the
    consumer then fetches from out of range; without an id (Kafka's request) the name
    decides."""
    w = one_broker_with([b"a", b"b", b"c"])
    assert delete_records_with_id(w, T0, 2, TOPIC_ID) is Errors.NONE
    assert list_offsets_with_id(w, T0, OTHER_ID) == (Errors.INCONSISTENT_TOPIC_ID, -1)
    assert list_offsets_with_id(w, T2, OTHER_ID) == (Errors.UNKNOWN_TOPIC_ID, -1)
    assert list_offsets_with_id(w, T0, TOPIC_ID) == (Errors.NONE, 2)
    assert list_offsets_with_id(w, T0, Uuid.ZERO) == (Errors.NONE, 2)


# ---- UpdateMetadata -----------------------------------------------------------------------------


def test_a_late_update_metadata_does_not_bring_a_deleted_topic_back() -> None:
    w = World(broker_ids=(1,))
    live = state(T0, 1, 1, [1])
    assert w.metadata(1, [live]).error is Errors.NONE  # correlation id n
    deleted = replace(live, leader=-2)
    assert w.metadata(1, [deleted]).error is Errors.NONE  # n + 1
    cache = w.brokers[1].replica_manager.metadata
    assert T0 not in cache.partitions
    # The first one again, late (duplicated by the network): older, ignored.
    send_control(w, 1, replace_cid_update(w, live, 1))
    assert T0 not in cache.partitions
    answer = cache.topic_metadata(MetadataRequest(1, ("t",)), lambda _t: True)
    assert answer.topics[0].error is Errors.UNKNOWN_TOPIC_OR_PARTITION


def replace_cid_update(w: World, st: LeaderAndIsrPartitionState, cid: int) -> Message:
    from logwright.protocol import UpdateMetadataRequest
    return UpdateMetadataRequest(cid, 1, 1, w.controller.broker_epochs[1], (st,), (1,))


# ---- the pure stray computation -----------------------------------------------------------------


def test_full_request_strays_is_the_decision_alone() -> None:
    a, b, c, d = (TopicPartition("t", i) for i in range(4))
    on_disk: dict[TopicPartition, Uuid | None] = {a: TOPIC_ID, b: TOPIC_ID, c: None, d: OTHER_ID}
    requested = {a: TOPIC_ID, c: TOPIC_ID, d: TOPIC_ID}
    got = full_request_strays(on_disk, requested, {}, (1, 10))
    assert set(got) == {b, d}, "absent, or another id; a missing id adopts the request's"
    assert "not assigned" in got[b] and "assigns topic id" in got[d]
    # A name decided by a newer request is left alone; an older one is not.
    assert set(full_request_strays(on_disk, requested, {b: (1, 11)}, (1, 10))) == {d}
    assert set(full_request_strays(on_disk, requested, {b: (1, 9)}, (1, 10))) == {b, d}
    assert set(full_request_strays(on_disk, requested, {b: (0, 99)}, (1, 10))) == {b, d}
    # An unreadable id is a stray even when assigned; Uuid.ZERO in the request compares nothing.
    assert set(full_request_strays(on_disk, {**requested, d: Uuid.ZERO}, {}, (1, 10),
                                   unreadable={a})) == {a, b}
    assert full_request_strays({}, requested, {}, (1, 10)) == {}


# ---- a request is never taken for an answer ------------------------------------------------------


def test_a_control_request_with_the_id_of_a_pending_broker_request_is_served() -> None:
    """Found by the KIP-550 scenario while writing it: correlation ids are numbered by each
    sender, so a controller's request may carry the id of a request the broker awaits an
    answer to (here an AlterPartition). It was taken for that answer and dropped; a FULL
    LeaderAndIsr lost that way leaves strays in place. A request is now always served."""
    w = World(broker_ids=(1,))
    w.controller.answer_alter_partition = False
    assert lair(w, 1, 1, [state(T0, 1, 1, [1, 2], [1, 2])]).error is Errors.NONE
    assert w.run_until(lambda: bool(w.controller.alter_requests), 120_000), "an ISR shrink"
    pending = w.controller.alter_requests[-1].correlation_id
    rm = w.brokers[1].replica_manager
    assert rm.partitions[T0].pending_isr is not None
    response = lair(w, 1, pending, [state(T0, 1, 1, [1, 2], [1, 2]), state(T1, 1, 1, [1])],
                    full=True)
    assert errors(response) == {T0: Errors.NONE, T1: Errors.NONE}
    assert T1 in rm.partitions
