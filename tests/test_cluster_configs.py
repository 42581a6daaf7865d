"""Topic configs on a running cluster: validated at create and alter, stored by the controller,
delivered to every replica, applied as per-topic overrides on a live topic, kept across broker
restarts, controller failover and a reopened real cluster."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from logwright import Cluster, KafkaError
from logwright.broker import BrokerConfig
from logwright.configs import ConfigFileError
from logwright.errors import Errors, InvalidConfig
from logwright.storage.naming import TopicPartition

# Retention checked every second, so a test sees it work after a few virtual seconds.
FAST = {"log.retention.check.interval.ms": "1000", "log.initial.task.delay.ms": "1000",
        "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500",
        "replica.lag.time.max.ms": "3000"}


def make_cluster(seed: int = 3, brokers: int = 3, **extra: str) -> Cluster:
    from logwright.controller import ControllerConfig

    props = {**FAST, **extra}
    return Cluster.simulated(brokers=brokers, log_dirs_per_broker=1, seed=seed,
                             broker_config=BrokerConfig.from_properties(props),
                             controller_config=ControllerConfig.from_properties(props))


def replicas(c: Cluster, topic: str, partition: int = 0) -> list[int]:
    return list(c.partition_state(topic, partition).replicas)


def log_of(c: Cluster, broker_id: int, topic: str, partition: int = 0):  # type: ignore[no-untyped-def]
    log = c.broker(broker_id).log_manager.get_log(TopicPartition(topic, partition))
    assert log is not None, f"broker {broker_id} has no log of {topic}-{partition}"
    return log


def produce_batches(c: Cluster, topic: str, count: int, size: int = 100,
                    gap_ms: int = 10) -> None:
    for i in range(count):
        c.produce(topic, 0, [b"%04d" % i + b"x" * size])
        c.advance_time(gap_ms)
    assert c.run_until_idle()


# ---- validation, storage, alter semantics -----------------------------------------------------


def test_invalid_configs_at_create_name_the_key_and_create_nothing() -> None:
    c = make_cluster()
    for configs, key in [({"retention.ms": "-5"}, "retention.ms"),
                         ({"segment.bytes": "big"}, "segment.bytes"),
                         ({"retention.ms": "1000", "retention.mss": "1"}, "retention.mss"),
                         ({"unclean.leader.election.enable": 1}, "unclean.leader.election.enable")]:
        with pytest.raises(InvalidConfig) as e:
            c.create_topic("t", 1, 3, configs=configs)
        assert e.value.key == key and e.value.name == "INVALID_CONFIG"
        assert all(t.name != "t" for t in c.controller.topics())
    c.create_topic("t", 1, 3, configs={"retention.ms": 1000, "cleanup.policy": "delete, compact",
                                       "unclean.leader.election.enable": True})
    # Stored in Kafka's string form.
    assert c.controller.describe_topic_configs("t") == {
        "cleanup.policy": "delete,compact", "retention.ms": "1000",
        "unclean.leader.election.enable": "true"}


def test_alter_is_incremental_and_delete_reverts_to_the_broker_default() -> None:
    c = make_cluster(**{"log.segment.bytes": "100000"})
    c.create_topic("t", 1, 3, configs={"retention.ms": "1000"})
    entries = c.describe_topic_configs("t")
    assert entries["retention.ms"].value == "1000"
    assert entries["retention.ms"].source == "DYNAMIC_TOPIC_CONFIG"
    assert entries["segment.bytes"].value == "100000"
    assert entries["segment.bytes"].source == "STATIC_BROKER_CONFIG"
    assert entries["segment.ms"].source == "DEFAULT_CONFIG"

    entries = c.alter_topic_configs("t", set={"segment.bytes": "2000"})
    assert entries["retention.ms"].value == "1000", "an alter keeps what it does not name"
    assert entries["segment.bytes"].value == "2000"
    entries = c.alter_topic_configs("t", set={"segment.bytes": "3000"}, delete=["retention.ms"])
    assert entries["segment.bytes"].value == "3000"
    assert entries["retention.ms"].value == str(7 * 24 * 3_600_000)
    assert entries["retention.ms"].source == "DEFAULT_CONFIG"
    for b in replicas(c, "t"):
        assert log_of(c, b, "t").config.segment_bytes == 3000
        assert log_of(c, b, "t").config.retention_ms == 7 * 24 * 3_600_000
    entries = c.alter_topic_configs("t", delete=["segment.bytes"])
    assert entries["segment.bytes"].value == "100000"
    for b in replicas(c, "t"):
        assert log_of(c, b, "t").config.segment_bytes == 100_000
    assert c.controller.describe_topic_configs("t") == {}
    # Deleting what is not set is no change, and no error (as kafka-configs.sh).
    assert c.alter_topic_configs("t", delete=["segment.ms"])["segment.ms"].is_default


def test_a_failed_alter_changes_nothing() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 3, configs={"retention.ms": "1000"})
    before = c.controller.topic("t")
    with pytest.raises(KafkaError) as e:
        c.alter_topic_configs("nope", set={"retention.ms": "5"})
    assert e.value.name == "UNKNOWN_TOPIC_OR_PARTITION"
    with pytest.raises(KafkaError) as e:
        c.describe_topic_configs("nope")
    assert e.value.name == "UNKNOWN_TOPIC_OR_PARTITION"
    for set_, delete, key in [({"segment.bytes": "1", "retention.ms": "5"}, [], "segment.bytes"),
                              ({"retention.ms": "5"}, ["retention.mss"], "retention.mss"),
                              ({"retention.ms": "5", "no.such": "1"}, [], "no.such")]:
        with pytest.raises(InvalidConfig) as e2:
            c.alter_topic_configs("t", set=set_, delete=delete)
        assert e2.value.key == key
    with pytest.raises(KafkaError) as e:
        c.alter_topic_configs("t", set={"retention.ms": "5"}, delete=["retention.ms"])
    assert e.value.name == "INVALID_REQUEST"
    c.advance_time(2_000)
    assert c.controller.topic("t") == before
    for b in replicas(c, "t"):
        assert log_of(c, b, "t").config.retention_ms == 1000


def test_configs_reach_every_replica_before_its_log_exists() -> None:
    c = make_cluster(brokers=4)
    c.create_topic("t", 3, 2, configs={"segment.bytes": "5000", "retention.bytes": "7000"})
    for p in range(3):
        for b in replicas(c, "t", p):
            cfg = log_of(c, b, "t", p).config
            assert (cfg.segment_bytes, cfg.retention_bytes) == (5000, 7000)
    # Brokers without a replica know the topic's configs too (UpdateMetadata), and the
    # configs of another topic are untouched.
    c.create_topic("u", 1, 2)
    for b in replicas(c, "u"):
        assert log_of(c, b, "u").config.segment_bytes == 1 << 30


# ---- each config taking effect on a live topic ------------------------------------------------


def test_lowering_retention_ms_deletes_old_segments_on_every_replica() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 3, configs={"segment.bytes": "600"})
    produce_batches(c, "t", 20)
    c.advance_time(5_000)
    for b in replicas(c, "t"):
        assert log_of(c, b, "t").log_start_offset == 0, "default retention: a week"
        assert len(log_of(c, b, "t").segments) > 3
    c.alter_topic_configs("t", set={"retention.ms": "1000"})
    c.advance_time(3_000)
    for b in replicas(c, "t"):
        log = log_of(c, b, "t")
        assert log.log_start_offset > 10, f"broker {b} kept its old segments"
        assert len(log.segments) <= 2
    # Every record was older than a second: all of them went, and reads start at the end.
    assert c.list_offsets("t", 0, "earliest") == c.list_offsets("t", 0, "latest") == 20
    c.produce("t", 0, [b"new"])
    assert [r.value for r in c.fetch("t", 0, 20)] == [b"new"]


def test_retention_bytes_and_cleanup_policy_compact_on_a_live_topic() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 3, configs={"segment.bytes": "600", "cleanup.policy": "compact",
                                       "retention.ms": "1", "retention.bytes": "0"})
    produce_batches(c, "t", 20)
    c.advance_time(5_000)
    for b in replicas(c, "t"):
        assert log_of(c, b, "t").log_start_offset == 0, "compact: no time or size retention"
    # A start offset raised by DeleteRecords is still honoured whatever the policy: not
    # exercised here (the cluster API has no DeleteRecords yet); see test_partition_log.
    c.alter_topic_configs("t", set={"cleanup.policy": "compact,delete", "retention.ms": "-1",
                                    "retention.bytes": "1200"})
    c.advance_time(3_000)
    for b in replicas(c, "t"):
        log = log_of(c, b, "t")
        assert 0 < log.size_bytes <= 1200 + 600, f"broker {b}: {log.size_bytes} bytes kept"
        assert log.log_start_offset > 0


def test_lowering_segment_bytes_rolls_on_leader_and_followers() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 3)
    produce_batches(c, "t", 5)
    for b in replicas(c, "t"):
        assert len(log_of(c, b, "t").segments) == 1
    c.alter_topic_configs("t", set={"segment.bytes": "300"})
    produce_batches(c, "t", 10)
    for b in replicas(c, "t"):
        segments = log_of(c, b, "t").segments
        assert len(segments) >= 5, f"broker {b} did not roll"
        assert all(s.size_bytes <= 300 for s in segments[1:])


def test_segment_index_bytes_rolls_when_the_index_is_full() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 3, configs={"index.interval.bytes": "0",
                                       "segment.index.bytes": "16"})
    produce_batches(c, "t", 12)
    for b in replicas(c, "t"):
        segments = log_of(c, b, "t").segments
        assert len(segments) >= 4, f"broker {b}: {len(segments)} segments"
        assert all(s.index.entries <= 2 for s in segments)


def test_max_message_bytes_refuses_large_batches_with_message_too_large() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 3)
    c.produce("t", 0, [b"x" * 2_000])
    c.alter_topic_configs("t", set={"max.message.bytes": "1000"})
    with pytest.raises(KafkaError) as e:
        c.produce("t", 0, [b"x" * 2_000])
    assert e.value.error is Errors.MESSAGE_TOO_LARGE and e.value.code == 10
    assert c.produce("t", 0, [b"small"]) == 1
    c.alter_topic_configs("t", delete=["max.message.bytes"])
    assert c.produce("t", 0, [b"x" * 2_000]) == 2


def test_min_insync_replicas_of_the_topic_guards_acks_all() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 3, configs={"min.insync.replicas": "3"})
    c.create_topic("two", 1, 3, configs={"min.insync.replicas": "2"})
    assert c.produce("t", 0, [b"all three"]) == 0
    state = c.partition_state("t", 0)
    follower = next(r for r in state.replicas if r != state.leader)
    c.crash_broker(follower)
    c.advance_time(10_000)
    assert len(c.partition_state("t", 0).isr) == 2
    with pytest.raises(KafkaError) as e:
        c.produce("t", 0, [b"needs three"])
    assert e.value.error is Errors.NOT_ENOUGH_REPLICAS
    assert c.produce("t", 0, [b"acks=1 is fine"], acks=1) == 1
    assert c.produce("two", 0, [b"two are enough"]) == 0
    c.alter_topic_configs("t", set={"min.insync.replicas": "2"})
    assert c.produce("t", 0, [b"now two do"]) == 2


def test_min_insync_replicas_above_the_replication_factor_is_accepted_as_kafka_does() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 2, configs={"min.insync.replicas": "3"})
    with pytest.raises(KafkaError) as e:
        c.produce("t", 0, [b"x"])
    assert e.value.error is Errors.NOT_ENOUGH_REPLICAS


def _offline_after_losing_the_isr(c: Cluster) -> tuple[int, int]:
    """Topic t (rf 2): the follower dies first (leaves the ISR), then the leader; returns
    (old leader, out-of-sync follower)."""
    c.produce("t", 0, [b"committed"])
    state = c.partition_state("t", 0)
    leader = state.leader
    follower = next(r for r in state.replicas if r != leader)
    c.crash_broker(follower)
    c.advance_time(10_000)
    assert c.partition_state("t", 0).isr == (leader,)
    c.crash_broker(leader)
    c.advance_time(10_000)
    assert c.partition_state("t", 0).leader == -1
    c.restart_broker(follower)
    c.advance_time(2_000)
    return leader, follower


def test_without_unclean_election_the_partition_stays_offline(
        caplog: pytest.LogCaptureFixture) -> None:
    c = make_cluster()
    c.create_topic("t", 1, 2)
    _, follower = _offline_after_losing_the_isr(c)
    assert c.partition_state("t", 0).leader == -1, "clean election only (the default)"
    with caplog.at_level(logging.WARNING, logger="logwright"):
        c.alter_topic_configs("t", set={"unclean.leader.election.enable": "true"})
        c.advance_time(1_000)
    state = c.partition_state("t", 0)
    assert state.leader == follower and state.isr == (follower,)
    assert "unclean leader election" in caplog.text
    assert c.produce("t", 0, [b"after"]) >= 0


def test_unclean_election_enabled_elects_a_live_out_of_sync_replica() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 2, configs={"unclean.leader.election.enable": "true"})
    _, follower = _offline_after_losing_the_isr(c)
    state = c.partition_state("t", 0)
    assert state.leader == follower and state.isr == (follower,)
    # The broker default applies too (a controller setting).
    c2 = make_cluster(**{"unclean.leader.election.enable": "true"})
    c2.create_topic("t", 1, 2)
    _, follower2 = _offline_after_losing_the_isr(c2)
    assert c2.partition_state("t", 0).leader == follower2
    # And a topic override of false wins over a broker default of true.
    c3 = make_cluster(**{"unclean.leader.election.enable": "true"})
    c3.create_topic("t", 1, 2, configs={"unclean.leader.election.enable": "false"})
    _offline_after_losing_the_isr(c3)
    assert c3.partition_state("t", 0).leader == -1


# ---- delivery across failures ------------------------------------------------------------------


def test_a_broker_down_during_an_alter_gets_the_configs_when_it_restarts() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 3, configs={"retention.ms": "100000"})
    down = replicas(c, "t")[-1]
    c.crash_broker(down)
    c.advance_time(5_000)
    c.alter_topic_configs("t", set={"segment.bytes": "700"}, delete=["retention.ms"])
    c.restart_broker(down)
    c.advance_time(1_000)
    cfg = log_of(c, down, "t").config
    assert cfg.segment_bytes == 700 and cfg.retention_ms == 7 * 24 * 3_600_000
    assert c.broker(down).log_manager.topic_overrides["t"] == {"segment.bytes": 700}


def test_an_older_message_never_rolls_a_config_back() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 3)
    rm = c.broker(replicas(c, "t")[0]).replica_manager
    c.alter_topic_configs("t", set={"segment.bytes": "700"})
    newest = rm.topic_config_versions["t"]
    c.alter_topic_configs("t", set={"segment.bytes": "800"})
    assert rm.topic_config_versions["t"] > newest
    from dataclasses import replace

    from logwright.protocol import LeaderAndIsrPartitionState, UpdateMetadataRequest

    state = LeaderAndIsrPartitionState(
        TopicPartition("t", 0), c.controller.topic("t").topic_id, newest[0], 1, 0, (1,), 0,
        (1, 2, 3), topic_configs=(("segment.bytes", "700"),))
    stale = UpdateMetadataRequest(newest[1], 1, newest[0], -1, (state,), (1, 2, 3))
    rm.update_metadata(stale)
    assert log_of(c, rm.broker_id, "t").config.segment_bytes == 800
    fresh = replace(stale, correlation_id=10**9)
    rm.update_metadata(fresh)
    assert log_of(c, rm.broker_id, "t").config.segment_bytes == 700


def test_configs_survive_controller_failover() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 3, configs={"segment.bytes": "900"})
    c.alter_topic_configs("t", set={"max.message.bytes": "5000"})
    c.fail_controller()
    assert c.controller.describe_topic_configs("t") == {"max.message.bytes": "5000",
                                                        "segment.bytes": "900"}
    c.alter_topic_configs("t", set={"segment.bytes": "1000"})
    for b in replicas(c, "t"):
        assert log_of(c, b, "t").config.segment_bytes == 1000
        assert log_of(c, b, "t").config.max_message_bytes == 5000


def test_file_delete_delay_ms_of_the_topic_delays_dir_removal() -> None:
    c = make_cluster()
    c.create_topic("quick", 1, 3, configs={"file.delete.delay.ms": "0"})
    c.create_topic("slow", 1, 3)
    hosts = replicas(c, "quick")
    c.delete_topic("quick")
    c.delete_topic("slow")
    c.advance_time(3_000)
    for b in hosts:
        dirs = c.broker(b).log_manager.dirs.values()
        pending = [n for d in dirs for n in d.pending_deletes]
        assert not any(n.startswith("quick-0.") for n in pending)
        assert any(n.startswith("slow-0.") for n in pending), "60 s by default"
    c.advance_time(60_000)
    for b in hosts:
        assert not [n for d in c.broker(b).log_manager.dirs.values() for n in d.pending_deletes]


# ---- the real cluster -------------------------------------------------------------------------


def test_a_real_cluster_keeps_topic_configs_across_a_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "cluster")
    c = Cluster.real(path, brokers=2, log_dirs_per_broker=1)
    try:
        c.create_topic("t", 1, 2, configs={"segment.bytes": "4096"})
        c.alter_topic_configs("t", set={"retention.ms": "3600000"})
    finally:
        c.close()
    again = Cluster.real(path, brokers=2, log_dirs_per_broker=1)
    try:
        assert again.controller.describe_topic_configs("t") == {"retention.ms": "3600000",
                                                                "segment.bytes": "4096"}
        again.run_until_idle()
        for b in (1, 2):
            cfg = log_of(again, b, "t").config
            assert (cfg.segment_bytes, cfg.retention_ms) == (4096, 3_600_000)
    finally:
        again.close()


def test_a_real_cluster_from_a_server_properties_file(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("# logwright test\nnode.id=1\nlog.segment.bytes=8192\n"
                     "min.insync.replicas=2\nbroker.session.timeout.ms=12000\n")
    c = Cluster.real(str(tmp_path / "c"), brokers=2, log_dirs_per_broker=1,
                     config_file=str(props), broker_properties={"message.max.bytes": 3000})
    try:
        assert c.broker_config.log.log.segment_bytes == 8192
        assert c.broker_config.min_insync_replicas == 2
        assert c.broker_config.log.log.max_message_bytes == 3000
        assert c.controller_config.broker_session_timeout_ms == 12_000
        entries = c.create_topic("t", 1, 2) and c.describe_topic_configs("t")
        assert entries["segment.bytes"].value == "8192"
        assert entries["segment.bytes"].source == "STATIC_BROKER_CONFIG"
        with pytest.raises(KafkaError) as e:
            c.produce("t", 0, [b"x" * 4000])
        assert e.value.error is Errors.MESSAGE_TOO_LARGE
    finally:
        c.close()
    props.write_text("log.segment.bytes=8192\nmin.insync.replicas=none\n")
    with pytest.raises(ConfigFileError) as e2:
        Cluster.real(str(tmp_path / "d"), brokers=1, config_file=str(props))
    assert e2.value.line == 2 and e2.value.key == "min.insync.replicas"
    assert str(props) in str(e2.value)


def test_a_restarted_broker_trims_nothing_before_it_knows_its_topic_configs() -> None:
    """Regression: logs loaded at start-up used the broker default until the controller's
    first LeaderAndIsr; a stricter broker default could delete what the topic keeps."""
    c = make_cluster(**{"log.retention.ms": "1000"})
    c.create_topic("keep", 1, 3, configs={"retention.ms": "-1", "segment.bytes": "600"})
    produce_batches(c, "keep", 12)
    c.advance_time(5_000)
    b = replicas(c, "keep")[-1]
    assert log_of(c, b, "keep").log_start_offset == 0
    c.crash_broker(b, power_loss=False)
    c.partition_network(b, "controller-1")
    c.restart_broker(b, wait=False)
    c.advance_time(10_000)  # several retention checks while it cannot register
    assert c.broker(b).broker_epoch == -1, "still unregistered"
    assert log_of(c, b, "keep").log_start_offset == 0
    c.heal_network()
    c.advance_time(10_000)
    assert log_of(c, b, "keep").config.retention_ms == -1
    assert log_of(c, b, "keep").log_start_offset == 0


def test_a_deposed_controller_cannot_alter_configs() -> None:
    c = make_cluster()
    c.create_topic("t", 1, 3, configs={"segment.bytes": "900"})
    zombie = c.controller
    c.fail_controller(zombie=True)
    with pytest.raises(KafkaError) as e:
        zombie.alter_topic_configs("t", set={"segment.bytes": "5000"})
    assert e.value.name in ("STALE_CONTROLLER_EPOCH", "NOT_CONTROLLER")
    c.advance_time(2_000)
    assert c.controller.describe_topic_configs("t") == {"segment.bytes": "900"}
    for b in replicas(c, "t"):
        assert log_of(c, b, "t").config.segment_bytes == 900
