"""The metadata store: writes conditional on the controller epoch, atomic, durable (SQLite).

Every test runs against both stores behind the one interface (MemoryStore for the simulator,
SqliteStore as the embedded default).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from logwright.controller.store import (
    MemoryStore,
    MetadataDelta,
    MetadataStore,
    PartitionState,
    PendingReassignment,
    SqliteStore,
    StaleControllerEpoch,
    TopicDeletion,
    TopicRecord,
)
from logwright.errors import Errors, KafkaError
from logwright.storage.naming import TopicPartition, Uuid

RNG = random.Random(7)
INCARNATION = Uuid.from_random(RNG)


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest,
               tmp_path: Path) -> Iterator[Callable[[], MetadataStore]]:
    """A factory: every call opens the same store (the same file for SQLite)."""
    opened: list[MetadataStore] = []
    memory = MemoryStore()

    def make() -> MetadataStore:
        store: MetadataStore = (memory if request.param == "memory"
                                else SqliteStore(str(tmp_path / "metadata.db")))
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Callable[[], MetadataStore]) -> MetadataStore:
    return make_store()


def topic(name: str = "t", partitions: int = 2) -> TopicRecord:
    return TopicRecord(name, Uuid.from_random(RNG), partitions, 2,
                       TopicRecord.configs_from({"retention.ms": "1000"}))


def state(record: TopicRecord, p: int, replicas: tuple[int, ...] = (1, 2),
          partition_epoch: int = 0, leader_epoch: int = 0) -> PartitionState:
    return PartitionState(TopicPartition(record.name, p), record.topic_id, replicas, replicas,
                          replicas[0], leader_epoch, partition_epoch)


def create(store: MetadataStore, epoch: int, record: TopicRecord) -> list[PartitionState]:
    states = [state(record, p) for p in range(record.partition_count)]
    store.write(epoch, MetadataDelta(topics=[record], partitions=states))
    return states


def test_claim_controller_increments_the_epoch(store: MetadataStore) -> None:
    assert store.controller() is None and store.controller_epoch() == 0
    assert store.claim_controller(0) == 1
    assert store.claim_controller(1) == 2
    assert store.claim_controller(0) == 3
    record = store.controller()
    assert record is not None and (record.controller_id, record.epoch) == (0, 3)


def test_a_stale_epoch_write_is_rejected_and_changes_nothing(store: MetadataStore) -> None:
    old = store.claim_controller(0)
    new = store.claim_controller(1)
    record = topic()
    with pytest.raises(StaleControllerEpoch) as info:
        create(store, old, record)
    assert isinstance(info.value, KafkaError)
    assert info.value.error == Errors.STALE_CONTROLLER_EPOCH and info.value.code == 11
    assert (info.value.writer_epoch, info.value.current_epoch) == (old, new)
    assert store.topic("t") is None and store.partitions() == []
    with pytest.raises(StaleControllerEpoch):
        store.register_broker(old, 1, INCARNATION, ["/d1"])
    assert store.broker(1) is None and store.last_broker_epoch() == 0
    with pytest.raises(StaleControllerEpoch):  # a future epoch is just as wrong
        create(store, new + 1, record)
    create(store, new, record)
    assert store.topic("t") == record


def test_broker_epochs_grow_strictly_across_brokers_and_registrations(
        store: MetadataStore) -> None:
    epoch = store.claim_controller(0)
    seen = []
    for broker_id in (1, 2, 1, 3, 1, 2):
        registration = store.register_broker(epoch, broker_id, Uuid.from_random(RNG), ["/d"])
        assert store.broker(broker_id) == registration and not registration.fenced
        seen.append(registration.broker_epoch)
    assert seen == sorted(set(seen)), "each registration gets a larger epoch than any before"
    assert store.last_broker_epoch() == seen[-1]
    assert [b.broker_id for b in store.brokers()] == [1, 2, 3]
    # The sequence survives a controller change: a new controller continues it.
    epoch = store.claim_controller(1)
    assert store.register_broker(epoch, 3, INCARNATION, ["/d"]).broker_epoch > seen[-1]


def test_topics_and_partitions_round_trip(store: MetadataStore) -> None:
    epoch = store.claim_controller(0)
    record = topic(partitions=3)
    states = create(store, epoch, record)
    assert store.topic("t") == record and store.topics() == [record]
    assert record.config_map == {"retention.ms": "1000"}
    assert store.partitions("t") == states and store.partitions() == states
    moved = PartitionState(states[1].tp, record.topic_id, (1, 2, 3), (1, 2), 2, 1, 1,
                           adding_replicas=(3,), removing_replicas=(1,),
                           target_log_dirs=("any", "any", "/d2"))
    store.write(epoch, MetadataDelta(partitions=[moved], reassignments=[
        PendingReassignment(moved.tp, (2, 3), ("any", "/d2"))]))
    assert store.partition(moved.tp) == moved and moved.log_dir_for(3) == "/d2"
    assert store.reassignments() == [PendingReassignment(moved.tp, (2, 3), ("any", "/d2"))]
    store.write(epoch, MetadataDelta(cleared_reassignments=[moved.tp]))
    assert store.reassignments() == []


def test_a_failing_delta_writes_nothing(store: MetadataStore) -> None:
    epoch = store.claim_controller(0)
    record = topic()
    stranger = TopicRecord("u", Uuid.from_random(RNG), 1, 1)
    # The second partition belongs to a topic that does not exist: the whole delta is refused.
    with pytest.raises(ValueError, match="has no topic"):
        store.write(epoch, MetadataDelta(topics=[record],
                                         partitions=[state(record, 0), state(stranger, 0)]))
    assert store.topics() == [] and store.partitions() == []
    with pytest.raises(ValueError, match="outside the topic"):
        store.write(epoch, MetadataDelta(topics=[record], partitions=[state(record, 5)]))
    assert store.topics() == []
    states = create(store, epoch, record)
    # A change that does not bump the partition epoch breaks an asserted invariant.
    with pytest.raises(AssertionError, match="partition epoch must grow"):
        store.write(epoch, MetadataDelta(partitions=[
            PartitionState(states[0].tp, record.topic_id, (1, 2), (1,), 1, 0, 0)]))
    assert store.partition(states[0].tp) == states[0]


def test_removing_a_topic_removes_its_partitions_and_markers(store: MetadataStore) -> None:
    epoch = store.claim_controller(0)
    record = topic()
    states = create(store, epoch, record)
    other = create(store, epoch, topic("other", 1))
    store.write(epoch, MetadataDelta(
        reassignments=[PendingReassignment(states[0].tp, (2,), ("any",))],
        deletions=[TopicDeletion("t", record.topic_id)]))
    assert store.deletions() == [TopicDeletion("t", record.topic_id)]
    store.write(epoch, MetadataDelta(removed_topics=["t"]))
    assert store.topic("t") is None and store.partitions() == other
    assert store.reassignments() == [] and store.deletions() == []
    again = topic()  # the same name, a new id
    create(store, epoch, again)
    assert store.topic("t") == again and again.topic_id != record.topic_id


def test_a_topic_id_never_changes_under_a_name(store: MetadataStore) -> None:
    epoch = store.claim_controller(0)
    create(store, epoch, topic())
    with pytest.raises(ValueError, match="another id"):
        store.write(epoch, MetadataDelta(topics=[topic()]))


def test_partition_states_assert_their_invariants() -> None:
    record = topic()
    tp = TopicPartition("t", 0)
    with pytest.raises(AssertionError, match="not in ISR"):
        PartitionState(tp, record.topic_id, (1, 2), (2,), 1, 0, 0)
    with pytest.raises(AssertionError, match="within replicas"):
        PartitionState(tp, record.topic_id, (1, 2), (1, 3), 1, 0, 0)
    # An empty ISR means no replica is eligible to lead (eligible leader replicas, KIP-966).
    PartitionState(tp, record.topic_id, (1, 2), (), -1, 0, 0, elr=(2,))
    with pytest.raises(AssertionError, match="with an empty ISR"):
        PartitionState(tp, record.topic_id, (1, 2), (), 1, 0, 0)
    with pytest.raises(AssertionError, match="overlap"):
        PartitionState(tp, record.topic_id, (1, 2), (1,), 1, 0, 0, elr=(1,))
    with pytest.raises(AssertionError, match=r"ELR .* not a set within replicas"):
        PartitionState(tp, record.topic_id, (1, 2), (1,), 1, 0, 0, elr=(3,))
    with pytest.raises(AssertionError, match="beside ISR"):
        PartitionState(tp, record.topic_id, (1, 2), (1,), 1, 0, 0,
                       recovery_log_ends=((2, 4, 0, 4),))
    with pytest.raises(AssertionError, match="not in epoch and offset order"):
        PartitionState(tp, record.topic_id, (1, 2), (1,), 1, 3, 0, lineage=((2, 5), (1, 6)))
    with pytest.raises(AssertionError, match="past leader epoch"):
        PartitionState(tp, record.topic_id, (1, 2), (1,), 1, 3, 0, lineage=((4, 0),))


def test_the_sqlite_file_survives_a_reopen(make_store: Callable[[], MetadataStore],
                                           tmp_path: Path) -> None:
    first = make_store()
    epoch = first.claim_controller(4)
    registration = first.register_broker(epoch, 1, INCARNATION, ["/data/d1", "/data/d2"])
    record = topic()
    states = create(first, epoch, record)
    first.write(epoch, MetadataDelta(deletions=[TopicDeletion("t", record.topic_id)]))
    first.close()
    second = make_store()  # the same file (or, for MemoryStore, the same object)
    controller = second.controller()
    assert controller is not None and (controller.controller_id, controller.epoch) == (4, epoch)
    assert second.broker(1) == registration
    assert second.topic("t") == record and second.partitions() == states
    assert second.deletions() == [TopicDeletion("t", record.topic_id)]
    assert second.claim_controller(5) == epoch + 1
    assert second.register_broker(epoch + 1, 2, INCARNATION, ["/d"]).broker_epoch > \
        registration.broker_epoch


def test_two_sqlite_handles_on_one_file_fence_each_other(tmp_path: Path) -> None:
    path = str(tmp_path / "metadata.db")
    old, new = SqliteStore(path), SqliteStore(path)
    try:
        old_epoch = old.claim_controller(0)
        new_epoch = new.claim_controller(1)
        assert new_epoch == old_epoch + 1
        with pytest.raises(StaleControllerEpoch):
            create(old, old_epoch, topic())
        assert new.topics() == [] and old.topics() == []
        create(new, new_epoch, topic())
        assert [t.name for t in old.topics()] == ["t"], "the old handle sees the new write"
    finally:
        old.close()
        new.close()


def test_sqlite_refuses_an_unknown_schema_version(tmp_path: Path) -> None:
    path = str(tmp_path / "metadata.db")
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    with pytest.raises(ValueError, match="schema version 99"):
        SqliteStore(path)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_sqlite_migrates_an_older_file_keeping_its_partitions(tmp_path: Path,
                                                               version: int) -> None:
    """Schema version 2 added the eligible leader replicas' columns, version 3 the log start
    offset a recovery election's leader adopts, version 4 the lineage (and reports that say
    how far a log agrees with it): an older file (made here by dropping them) is migrated when
    opened, its partitions read with the new fields empty, a version 3 report (which has no
    such figure) dropped, and the new fields are stored from then on."""
    path = str(tmp_path / "metadata.db")
    store = SqliteStore(path)
    epoch = store.claim_controller(0)
    (first, second) = create(store, epoch, topic())
    store.close()
    db = sqlite3.connect(path)
    dropped = ("elr", "recovery_log_ends", "leader_log_start_offset", "lineage")[
        {1: 0, 2: 2, 3: 3}[version]:]
    for column in dropped:
        db.execute(f"ALTER TABLE partitions DROP COLUMN {column}")
    if version == 3:
        db.execute("UPDATE partitions SET recovery_log_ends = '[[1, 0, 5]]'")
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        assert store.partitions() == [first, second]
        assert store.partitions()[0].elr == ()
        assert store.partitions()[0].leader_log_start_offset == 0
        assert store.partitions()[0].lineage == () and store.partitions()[0].lineage_epoch == -1
        changed = PartitionState(first.tp, first.topic_id, first.replicas, (), -1,
                                 first.leader_epoch + 1, first.partition_epoch + 1,
                                 elr=(2,), lineage=((0, 0), (first.leader_epoch + 1, 7)))
        offline = PartitionState(second.tp, second.topic_id, second.replicas, (), -1,
                                 second.leader_epoch + 1, second.partition_epoch + 1,
                                 recovery_log_ends=((1, 5, 0, 5), (2, 2, 1, 3)),
                                 leader_log_start_offset=4)
        store.write(epoch, MetadataDelta(partitions=[changed, offline]))
    finally:
        store.close()
    reopened = SqliteStore(path)
    try:
        assert reopened.partitions() == [changed, offline]
        assert int(reopened._db.execute("PRAGMA user_version").fetchone()[0]) == 4
    finally:
        reopened.close()


def test_sqlite_refuses_another_programs_database_saying_it_is_left_as_it_is(
        tmp_path: Path) -> None:
    path = str(tmp_path / "notes.db")
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (body TEXT)")
    db.commit()
    db.close()
    with pytest.raises(ValueError) as info:
        SqliteStore(path)
    assert str(info.value) == (f"{path}: an SQLite database of another program (tables but no "
                               "logwright schema version); refused, left as it is")


def test_changed_topic_configs_are_written_conditionally_and_survive_a_reopen(
        make_store: Callable[[], MetadataStore]) -> None:
    from dataclasses import replace

    store = make_store()
    epoch = store.claim_controller(0)
    record = topic()
    create(store, epoch, record)
    altered = replace(record, configs=TopicRecord.configs_from(
        {"retention.ms": "5", "segment.bytes": "4096"}))
    store.write(epoch, MetadataDelta(topics=[altered]))
    assert store.topic("t") == altered
    newer = store.claim_controller(1)
    with pytest.raises(StaleControllerEpoch):
        store.write(epoch, MetadataDelta(topics=[replace(record, configs=())]))
    store.close()
    again = make_store()
    assert again.topic("t") == altered
    assert again.topic("t").config_map == {"retention.ms": "5", "segment.bytes": "4096"}  # type: ignore[union-attr]
    assert again.controller_epoch() == newer
