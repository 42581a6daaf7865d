"""The embedded client retries as Kafka's clients do: Metadata, timeouts, backoff, error types.

Scenario tests run the real cluster over the simulated world (several seeds each): a lossy
network, one chosen message lost or duplicated, late answers, a leader crash with no time
advanced by the test, a leader-less partition, a deleted topic. Unit tests pin the client's
config validation, the backoff and the metadata cache's epoch rule.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable

import pytest

from logwright import (
    ClientConfig,
    Cluster,
    ClusterError,
    InvalidRequest,
    KafkaError,
    LeaderNotAvailable,
    OffsetOutOfRange,
    RequestTimedOut,
    TopicAuthorizationFailed,
    UnknownTopicOrPartition,
)
from logwright.broker import AclBinding, Operation, ResourceType
from logwright.broker.authorizer import Permission
from logwright.cluster.client import ClientMetadata
from logwright.errors import Errors, InvalidArgument
from logwright.protocol import (
    MetadataBroker,
    MetadataPartition,
    MetadataRequest,
    MetadataResponse,
    MetadataTopic,
    ProduceRequest,
    ProduceResponse,
)
from logwright.storage.naming import TopicPartition, Uuid

SEEDS = (1, 2, 3, 4, 5)


def acknowledged_survive(c: Cluster, topic: str, partition: int,
                         acked: dict[int, bytes]) -> None:
    """Every acknowledged record is read back at its offset (duplicates from retries allowed
    elsewhere: the client is at least once, as Kafka's producer without idempotence)."""
    got = {r.offset: r.value for r in c.fetch(topic, partition, 0)}
    for offset, value in acked.items():
        assert got.get(offset) == value, f"acknowledged {value!r} at {offset}, read {got}"


def is_(kind: type, src: str | None = None, dst: str | None = None
        ) -> Callable[[str, str, object], bool]:
    return lambda s, d, m: (isinstance(m, kind) and (src is None or s == src)
                            and (dst is None or d == dst))


# ---- lossy networks -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_calls_complete_on_a_lossy_network(seed: int) -> None:
    """Drops and duplicates of single messages (all traffic, replication included) never fail a
    call: each lost request or answer costs one attempt's timeout and a retry. Kafka's timeouts,
    but fetch and list_offsets get as long as produce (120 s, four attempts): with the default
    60 s two lost messages in a row on one call fail it, as they would a Kafka consumer's."""
    config = ClientConfig(default_api_timeout_ms=120_000)
    c = Cluster.simulated(brokers=3, seed=seed, drop_rate=0.02, duplicate_rate=0.05,
                          client_config=config)
    c.create_topic("t", partitions=2, replication_factor=3)
    acked: dict[int, dict[int, bytes]] = {0: {}, 1: {}}
    for i in range(12):
        p = i % 2
        value = b"v%d" % i
        acked[p][c.produce("t", p, [value], acks="all")] = value
    for p in (0, 1):
        acknowledged_survive(c, "t", p, acked[p])
        assert c.list_offsets("t", p, "earliest") == 0
        assert c.list_offsets("t", p, "latest") > max(acked[p])
    world = c.simulated_world.network.stats
    assert world.dropped > 0 and world.duplicated > 0, "the network was lossy"
    assert c.client.retries > 0, "some call needed a retry"
    assert c.client.node.responses == {} and c.client.node.in_flight == 0, "nothing kept"


@pytest.mark.parametrize("kind", [ProduceRequest, ProduceResponse, MetadataRequest,
                                  MetadataResponse])
def test_one_lost_message_costs_one_retry(kind: type) -> None:
    """One lost produce request, produce answer or metadata message: the call completes after
    one attempt's timeout; a lost answer means the batch was appended twice (at least once)."""
    config = ClientConfig(request_timeout_ms=2_000)
    c = Cluster.simulated(brokers=3, seed=9, client_config=config)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.simulated_world.network.drop_next(is_(kind))
    start = c.runtime.clock.now_ms()
    offset = c.produce("t", 0, [b"x"], acks="all")
    assert c.runtime.clock.now_ms() - start >= config.request_timeout_ms, "one attempt timed out"
    assert c.client.retries == 1
    appended_twice = kind is ProduceResponse
    assert offset == (1 if appended_twice else 0)
    expected = [b"x", b"x"] if appended_twice else [b"x"]
    assert c.run_until_idle()
    assert [r.value for r in c.fetch("t", 0, 0)] == expected


def test_a_duplicated_answer_is_never_taken_for_a_later_attempt() -> None:
    c = Cluster.simulated(brokers=3, seed=4)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.produce("t", 0, [b"a"])
    net = c.simulated_world.network
    for kind in (MetadataResponse, ProduceResponse):
        net.duplicate_next(is_(kind))
    c.client.metadata.request_update("t")
    assert c.produce("t", 0, [b"b"], acks=1) == 1
    assert c.produce("t", 0, [b"c"], acks=1) == 2
    assert c.client.node.dropped_responses >= 2, "both second copies were dropped"
    assert c.client.node.responses == {} and c.client.node.in_flight == 0
    assert c.run_until_idle()
    assert [r.value for r in c.fetch("t", 0, 0)] == [b"a", b"b", b"c"]


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_late_answers_to_abandoned_attempts_are_dropped(seed: int) -> None:
    """Round trips up to 2 x 300 ms against a 400 ms request timeout: some attempts give up
    before their answer comes; that answer arrives during a later attempt and is dropped (its
    correlation id is no longer awaited), so every call still returns its own answer."""
    c = Cluster.simulated(brokers=3, seed=seed, min_delay_ms=1, max_delay_ms=300,
                          client_config=ClientConfig(request_timeout_ms=400))
    c.create_topic("t", partitions=1, replication_factor=3)
    acked: dict[int, bytes] = {}
    for i in range(20):
        acked[c.produce("t", 0, [b"v%d" % i], acks=1)] = b"v%d" % i
        assert c.client.node.responses == {} and c.client.node.in_flight == 0
    assert c.run_until_idle()
    latest = c.list_offsets("t", 0, "latest")
    assert latest >= 20 and latest > max(acked)
    acknowledged_survive(c, "t", 0, acked)
    assert c.client.node.dropped_responses > 0, "some answer came late"


def test_one_seed_reproduces_one_lossy_run() -> None:
    def run(seed: int) -> tuple[object, ...]:
        c = Cluster.simulated(brokers=3, seed=seed, drop_rate=0.02, duplicate_rate=0.05)
        c.create_topic("t", partitions=1, replication_factor=3)
        offsets = [c.produce("t", 0, [b"%d" % i]) for i in range(5)]
        return (offsets, c.runtime.clock.now_ms(), c.runtime.events, c.client.retries,
                c.client.metadata_requests)

    assert run(3) == run(3)
    assert run(3) != run(4)


# ---- leader changes -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("power_loss", [True, False])
def test_a_leader_crash_then_election_fails_no_call(seed: int, power_loss: bool) -> None:
    """The test crashes the leader and calls at once: the client's attempts time out, it asks
    a live broker for metadata until the controller has elected a new leader from the ISR, and
    every acks=all record acknowledged before or after is there."""
    c = Cluster.simulated(brokers=3, seed=seed)
    c.create_topic("t", partitions=1, replication_factor=3)
    acked = {c.produce("t", 0, [b"before-%d" % i], acks="all"): b"before-%d" % i
             for i in range(3)}
    old = c.partition_state("t", 0)
    c.crash_broker(old.leader, power_loss=power_loss)
    requests = c.client.metadata_requests
    offset = c.produce("t", 0, [b"after"], acks="all")
    acked[offset] = b"after"
    new = c.partition_state("t", 0)
    assert new.leader != old.leader and new.leader_epoch > old.leader_epoch
    assert c.client.metadata_requests > requests, "the new leader was learnt from Metadata"
    acknowledged_survive(c, "t", 0, acked)
    assert c.list_offsets("t", 0, "latest") == offset + 1


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_fetch_and_list_offsets_follow_the_leader_after_a_crash(seed: int) -> None:
    c = Cluster.simulated(brokers=3, seed=seed)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.produce("t", 0, [b"a", b"b"], acks=-1)
    assert [r.value for r in c.fetch("t", 0, 0)] == [b"a", b"b"]  # metadata is cached
    c.crash_broker(c.partition_state("t", 0).leader)
    # The dead leader refuses the connection, so the client reaches the new leader at once;
    # until the ISR drops the dead broker the new leader's high watermark may lag (Kafka's
    # too), so a consumer polls: no call fails, and the committed records come back.
    assert poll(c, "t") == [b"a", b"b"]
    c.crash_broker(c.partition_state("t", 0).leader)
    assert c.list_offsets("t", 0, "latest") in (0, 1, 2)
    assert poll(c, "t") == [b"a", b"b"]
    assert c.list_offsets("t", 0, "latest") == 2


def poll(c: Cluster, topic: str, rounds: int = 100) -> list[bytes | None]:
    """Fetch from offset 0 until records come back, as a consumer's poll loop does."""
    for _ in range(rounds):
        records = [r.value for r in c.fetch(topic, 0, 0)]
        if records:
            return records
        c.advance_time(500)
    return []


def test_the_first_metadata_node_down_the_client_asks_another() -> None:
    c = Cluster.simulated(brokers=3, seed=5)
    c.create_topic("t", partitions=1, replication_factor=3)
    asked: list[str] = []

    def watch(src: str, dst: str, message: object) -> bool:
        if isinstance(message, MetadataRequest):
            asked.append(dst)
        return False

    c.simulated_world.network.drop_next(watch)
    c.simulated_world.network.drop_next(is_(MetadataRequest))
    assert c.produce("t", 0, [b"x"]) == 0
    assert len(asked) == 2 and asked[0] != asked[1], "the node that did not answer is avoided"


def test_a_partition_without_a_leader_is_leader_not_available() -> None:
    c = Cluster.simulated(brokers=3, seed=6)
    c.create_topic("t", partitions=1, replication_factor=1)
    c.produce("t", 0, [b"x"])
    c.crash_broker(c.partition_state("t", 0).leader)
    c.advance_time(15_000)  # the controller notices: no ISR member left, leader -1
    assert c.partition_state("t", 0).leader == -1
    # The cached metadata still names the dead leader, which refuses the connection: the
    # client asks again at once and learns there is no leader.
    with pytest.raises(LeaderNotAvailable):
        c.fetch("t", 0, 0, timeout_ms=3_000)
    assert c.client.refused_connections >= 1
    with pytest.raises(LeaderNotAvailable):
        c.fetch("t", 0, 0, timeout_ms=3_000)
    with pytest.raises(LeaderNotAvailable):
        c.produce("t", 0, [b"y"], timeout_ms=3_000)


# ---- the broker's Metadata answers --------------------------------------------------------------


def ask_metadata(c: Cluster, broker_id: int, topics: tuple[str, ...] | None) -> MetadataResponse:
    node = c.client.node
    cid = node.next_correlation_id()
    node.request(f"broker-{broker_id}", MetadataRequest(cid, topics))
    assert c.runtime.run_until(lambda: cid in node.responses, 1_000)
    response = node.take(cid)
    assert isinstance(response, MetadataResponse)
    return response


def test_every_broker_answers_metadata_from_its_cache() -> None:
    c = Cluster.simulated(brokers=3, seed=2)
    c.create_topic("t", partitions=2, replication_factor=2)
    c.create_topic("u", partitions=1, replication_factor=3)
    for b in (1, 2, 3):
        response = ask_metadata(c, b, ("t", "nope"))
        assert [bk.node_id for bk in response.brokers] == [1, 2, 3]
        assert response.controller_id == c.controller.controller_id
        t, nope = response.topics
        assert nope == MetadataTopic("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION)
        assert t.error is Errors.NONE and [p.partition for p in t.partitions] == [0, 1]
        for p in t.partitions:
            state = c.partition_state("t", p.partition)
            assert (p.leader, p.leader_epoch, p.replicas, p.isr) == (
                state.leader, state.leader_epoch, state.replicas, state.isr)
        assert [x.name for x in ask_metadata(c, b, None).topics] == ["t", "u"]


def test_a_deleted_topic_leaves_every_brokers_metadata() -> None:
    """Regression: UpdateMetadata for a deleted topic (leader -2) used to stay in the brokers'
    caches, so clients were told the partition exists without a leader."""
    c = Cluster.simulated(brokers=3, seed=3)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.produce("t", 0, [b"x"])
    c.delete_topic("t")
    for b in (1, 2, 3):
        (answer,) = ask_metadata(c, b, ("t",)).topics
        assert answer.error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(UnknownTopicOrPartition):
        c.produce("t", 0, [b"y"], timeout_ms=2_000)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_reordered_update_metadata_does_not_bring_back_an_old_leader_epoch(seed: int) -> None:
    """Regression: a reassignment that only reorders replicas sends two UpdateMetadata at once;
    reordered, the older one overwrote the newer in brokers' caches, and consumers (fetching
    with the cached leader epoch) were FENCED until their deadline."""
    c = Cluster.simulated(brokers=3, seed=seed, max_delay_ms=10)
    c.create_topic("s", partitions=1, replication_factor=3)
    c.produce("s", 0, [b"x"])
    replicas = list(reversed(c.partition_state("s", 0).replicas))
    c.reassign(json.dumps({"version": 1, "partitions": [
        {"topic": "s", "partition": 0, "replicas": replicas}]}))
    assert c.run_until_idle()
    state = c.partition_state("s", 0)
    tp = TopicPartition("s", 0)
    # The last UpdateMetadata follows the reassignment's completion (which waits for every
    # target's LeaderAndIsr answer): settled once every cache has the newest state.
    assert c.runtime.run_until(lambda: all(
        c.broker(b).replica_manager.metadata.partitions[tp].leader_epoch == state.leader_epoch
        for b in (1, 2, 3)), 1_000)
    c.runtime.run_until(lambda: False, 50)  # and no late, older UpdateMetadata takes it back
    for b in (1, 2, 3):
        (answer,) = ask_metadata(c, b, ("s",)).topics
        assert answer.partitions[0].leader_epoch == state.leader_epoch
    assert [r.value for r in c.fetch("s", 0, 0, timeout_ms=10_000)] == [b"x"]


# ---- errors, acks, timeouts ---------------------------------------------------------------------


def test_fetch_below_the_log_start_offset_raises_offset_out_of_range_at_once() -> None:
    c = Cluster.simulated(brokers=3, seed=8)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.produce("t", 0, [b"a", b"b", b"c", b"d"])
    assert c.run_until_idle()
    leader = c.broker(c.partition_state("t", 0).leader)  # as DeleteRecords would on the leader
    leader.replica_manager.describe()[TopicPartition("t", 0)].log.increment_log_start_offset(2)
    assert c.list_offsets("t", 0, "earliest") == 2
    start = c.runtime.clock.now_ms()
    with pytest.raises(OffsetOutOfRange) as e:
        c.fetch("t", 0, 1)
    assert (e.value.name, e.value.code) == ("OFFSET_OUT_OF_RANGE", 1)
    assert c.runtime.clock.now_ms() - start < c.client_config.retry_backoff_ms, "not retried"
    assert [r.value for r in c.fetch("t", 0, 2)] == [b"c", b"d"]
    with pytest.raises(OffsetOutOfRange):
        c.fetch("t", 0, 5)  # past the high watermark


def test_a_retriable_error_is_retried_until_the_call_deadline() -> None:
    c = Cluster.simulated(brokers=3, seed=8)
    start = c.runtime.clock.now_ms()
    with pytest.raises(UnknownTopicOrPartition):
        c.produce("nope", 0, [b"x"], timeout_ms=3_000)
    elapsed = c.runtime.clock.now_ms() - start
    assert 2_000 <= elapsed <= 3_000, elapsed
    assert c.client.metadata_requests >= 4


def test_a_fatal_error_fails_the_call_at_once() -> None:
    c = Cluster.simulated(brokers=3, seed=2)
    c.create_topic("secret", partitions=1, replication_factor=3)
    c.create_topic("open", partitions=1, replication_factor=3)
    c.produce("secret", 0, [b"before the ACL"])  # the client has its metadata cached
    for b in (1, 2, 3):
        authorizer = c.broker(b).authorizer
        authorizer.add_acl(AclBinding("User:*", ResourceType.CLUSTER, "*", Operation.ALL))
        authorizer.add_acl(AclBinding("User:*", ResourceType.TOPIC, "*", Operation.ALL))
        authorizer.add_acl(AclBinding("User:*", ResourceType.TOPIC, "secret", Operation.ALL,
                                      Permission.DENY))
    calls: list[Callable[[], object]] = [
        lambda: c.produce("secret", 0, [b"x"]),  # the Produce answer says so
        lambda: c.fetch("secret", 0, 0),  # the Fetch answer says so
    ]
    for call in calls:
        start = c.runtime.clock.now_ms()
        with pytest.raises(TopicAuthorizationFailed) as e:
            call()
        assert e.value.code == 29
        assert c.runtime.clock.now_ms() - start < c.client_config.retry_backoff_ms, "no retry"
    c.client.metadata.request_update("secret")
    with pytest.raises(TopicAuthorizationFailed):  # now the Metadata answer says so
        c.list_offsets("secret", 0, "latest")
    assert c.produce("open", 0, [b"fine"]) == 0


@pytest.mark.parametrize("acks", [1, -1, "all"])
def test_acks(acks: int | str) -> None:
    c = Cluster.simulated(brokers=3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    assert c.produce("t", 0, [b"a"], acks=acks) == 0  # type: ignore[arg-type]
    assert c.produce("t", 0, [b"b"], acks=0) == -1
    c.advance_time(100)  # nothing to wait for: the request may still be on its way
    assert c.run_until_idle()
    assert [r.value for r in c.fetch("t", 0, 0)] == [b"a", b"b"]


@pytest.mark.parametrize("acks", [2, "1", "ALL", True, None, -2, 1.0])
def test_bad_acks_is_invalid_request(acks: object) -> None:
    c = Cluster.simulated(brokers=1, seed=1)
    c.create_topic("t")
    with pytest.raises(InvalidRequest):
        c.produce("t", 0, [b"a"], acks=acks)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout_ms", [0, -1, 1.5, True])
def test_bad_call_timeout_is_invalid_argument(timeout_ms: object) -> None:
    c = Cluster.simulated(brokers=1, seed=1)
    c.create_topic("t")
    for call in (lambda: c.produce("t", 0, [b"a"], timeout_ms=timeout_ms),  # type: ignore
                 lambda: c.fetch("t", 0, 0, timeout_ms=timeout_ms),  # type: ignore
                 lambda: c.list_offsets("t", 0, "latest", timeout_ms=timeout_ms)):  # type: ignore
        with pytest.raises(InvalidArgument):
            call()


def test_a_call_deadline_shorter_than_a_round_trip_times_out() -> None:
    c = Cluster.simulated(brokers=3, seed=1, min_delay_ms=5, max_delay_ms=5)
    c.create_topic("t")
    c.client.metadata.request_update("t")
    with pytest.raises(RequestTimedOut):
        c.fetch("t", 0, 0, timeout_ms=3)


# ---- config, backoff, metadata cache ------------------------------------------------------------


@pytest.mark.parametrize("fields", [
    {"request_timeout_ms": 0}, {"retry_backoff_ms": -1}, {"metadata_max_age_ms": True},
    {"default_api_timeout_ms": 1.0}, {"retry_backoff_ms": 2_000},
    {"request_timeout_ms": 200_000},
])
def test_client_config_is_validated(fields: dict[str, object]) -> None:
    with pytest.raises(ClusterError):
        ClientConfig(**fields)  # type: ignore[arg-type]


def test_client_config_defaults_are_kafkas() -> None:
    assert ClientConfig() == ClientConfig(request_timeout_ms=30_000, delivery_timeout_ms=120_000,
                                          default_api_timeout_ms=60_000, retry_backoff_ms=100,
                                          retry_backoff_max_ms=1_000,
                                          metadata_max_age_ms=300_000)


@pytest.mark.parametrize("seed", SEEDS)
def test_backoff_doubles_with_jitter_up_to_the_max(seed: int) -> None:
    config = ClientConfig()
    waits = [config.backoff_ms(n, random.Random(seed)) for n in range(8)]
    assert waits == [config.backoff_ms(n, random.Random(seed)) for n in range(8)], "seeded"
    for n, wait in enumerate(waits):
        term = 100 * 2 ** n
        assert min(0.8 * term, 1_000) <= wait <= min(1.2 * term, 1_000)
    assert waits[-1] == 1_000


def test_metadata_with_an_older_leader_epoch_is_ignored() -> None:
    meta = ClientMetadata()
    tid = Uuid.from_random(random.Random(1))
    brokers = (MetadataBroker(1, "broker-1"), MetadataBroker(2, "broker-2"))

    def answer(leader: int, epoch: int, topic_id: Uuid = tid) -> MetadataResponse:
        return MetadataResponse(1, brokers, 1, (MetadataTopic("t", Errors.NONE, topic_id, (
            MetadataPartition(0, Errors.NONE, leader, epoch, (1, 2), (1, 2)),)),))

    tp = TopicPartition("t", 0)
    meta.update(answer(2, 5), 0)
    meta.update(answer(1, 4), 1)  # a broker that has not heard of epoch 5 yet
    found = meta.partition(tp, 1, 1_000)
    assert found is not None and (found.leader, found.leader_epoch) == (2, 5)
    forgotten = MetadataResponse(1, brokers, 1, (
        MetadataTopic("t", Errors.UNKNOWN_TOPIC_OR_PARTITION),))  # a broker just restarted
    meta.update(forgotten, 1)
    assert meta.partition(tp, 1, 1_000) is None
    meta.update(answer(1, 4), 1)  # still older than the epoch last seen: stays unknown
    assert meta.partition(tp, 1, 1_000) is None
    meta.update(answer(2, 5), 1)
    found = meta.partition(tp, 1, 1_000)
    assert found is not None and (found.leader, found.leader_epoch) == (2, 5)
    meta.update(answer(1, 0, Uuid.from_random(random.Random(2))), 2)  # re-created topic
    found = meta.partition(tp, 2, 1_000)
    assert found is not None and (found.leader, found.leader_epoch) == (1, 0)
    assert meta.partition(tp, 2 + 1_001, 1_000) is None, "older than metadata.max.age.ms"
    meta.request_update("t")
    assert meta.partition(tp, 3, 1_000) is None


# ---- closing ------------------------------------------------------------------------------------


def test_with_block_shuts_down_cleanly(tmp_path: object) -> None:
    path = f"{tmp_path}/cluster"
    with Cluster.real(path, brokers=2, log_dirs_per_broker=2) as c:
        c.create_topic("t", partitions=2, replication_factor=2)
        c.produce("t", 0, [b"durable"], acks="all")
        dirs = [d for ds in c.log_dirs.values() for d in ds]
    assert len(dirs) == 4
    for d in dirs:
        assert os.path.exists(os.path.join(d, ".kafka_cleanshutdown")), d
    c.close()  # idempotent
    for call in (lambda: c.produce("t", 0, [b"x"]), lambda: c.fetch("t", 0, 0),
                 lambda: c.list_offsets("t", 0, "latest"), lambda: c.create_topic("u"),
                 lambda: c.advance_time(1), lambda: c.broker(1)):
        with pytest.raises(ClusterError):
            call()
    with Cluster.real(path, brokers=2, log_dirs_per_broker=2) as again:
        assert [r.value for r in again.fetch("t", 0, 0)] == [b"durable"]


def test_with_block_closes_on_an_exception_too() -> None:
    with pytest.raises(KafkaError), Cluster.simulated(brokers=1, seed=1) as c:
        c.fetch("nope", 0, 0, timeout_ms=500)
    assert c.closed
    with pytest.raises(ClusterError):
        c.produce("nope", 0, [b"x"])
