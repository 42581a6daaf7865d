"""Metrics: per-log gauges with Kafka's names, the broker label, the merged exposition and the
HTTP endpoint of a real cluster."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from logwright import Cluster
from logwright.broker import metrics as m
from logwright.cluster.cluster import ClusterError
from logwright.storage.naming import TopicPartition


def samples(text: bytes) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, dict(s.labels), s.value)
            for family in text_string_to_metric_families(text.decode())
            for s in family.samples]


def test_per_log_gauges_follow_the_logs_a_broker_hosts() -> None:
    c = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=11)
    c.create_topic("a", partitions=2, replication_factor=2)
    c.create_topic("b", partitions=1, replication_factor=3)
    for p in (0, 1):
        c.produce("a", p, [b"x"] * (p + 2))
    c.produce("b", 0, [b"y"])
    assert c.run_until_idle()
    for bid, broker in c.brokers.items():
        snap = c.metrics(bid)
        hosted = {log.tp: log for log in broker.log_manager.all_logs()}
        keys = {k for k in snap if k.startswith(m.PER_LOG_PREFIX)}
        assert keys == {fmt.format(tp.topic, tp.partition) for tp in hosted
                        for fmt in (m.LOG_START_OFFSET, m.LOG_END_OFFSET, m.LOG_SIZE)}
        for tp, log in hosted.items():
            assert snap[m.LOG_END_OFFSET.format(tp.topic, tp.partition)] == log.log_end_offset
            assert snap[m.LOG_START_OFFSET.format(tp.topic, tp.partition)] == 0
            assert snap[m.LOG_SIZE.format(tp.topic, tp.partition)] == log.size_bytes > 0
    leader = c.partition_state("a", 1).leader
    log = c.broker(leader).log_manager.get_log(TopicPartition("a", 1))
    assert log is not None and log.increment_log_start_offset(2)
    assert c.metrics(leader)[m.LOG_START_OFFSET.format("a", 1)] == 2, "read at collection"
    summed = c.metrics()
    assert not any(k.startswith(m.PER_LOG_PREFIX) for k in summed), "never summed"
    assert summed[m.PARTITION_COUNT] == 2 * 2 + 3
    c.delete_topic("a")
    c.advance_time(2_000)
    for bid in c.brokers:
        assert not any(",topic=a," in k for k in c.metrics(bid)), "a deleted log's gauges go"
        assert m.LOG_END_OFFSET.format("b", 0) in c.metrics(bid)


def test_every_sample_carries_its_broker_and_the_merged_exposition_has_one_family_each(
        ) -> None:
    c = Cluster.simulated(brokers=3, log_dirs_per_broker=1, seed=5)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.produce("t", 0, [b"v"])
    assert c.run_until_idle()
    for bid, broker in c.brokers.items():
        got = samples(broker.metrics.exposition())
        assert got and all(labels["broker"] == str(bid) for _, labels, _ in got)
        assert ("kafka_log_log_logendoffset", {"broker": str(bid), "topic": "t",
                                               "partition": "0"}, 1.0) in got
    text = c.metrics_exposition()
    type_lines = [line for line in text.decode().splitlines() if line.startswith("# TYPE")]
    assert len(type_lines) == len(set(type_lines)), "one family per metric name"
    merged = [s for s in samples(text) if "controller" not in s[1]]
    controller = [s for s in samples(text) if "controller" in s[1]]
    assert {labels["broker"] for _, labels, _ in merged} == {"1", "2", "3"}
    assert ("kafka_controller_kafkacontroller_offlinepartitionscount",
            {"controller": str(c.controller.controller_id)}, 0.0) in controller
    for bid in c.brokers:
        own = [(n, lb, v) for n, lb, v in merged if lb["broker"] == str(bid)]
        assert sorted(own, key=repr) == sorted(samples(c.broker(bid).metrics.exposition()),
                                               key=repr)
    c.crash_broker(2)
    assert {lb.get("broker") for _, lb, _ in samples(c.metrics_exposition())} == {"1", "3", None}
    with pytest.raises(Exception, match="simulated"):
        c.serve_metrics(0)


def _get(port: int) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        body: bytes = response.read()
        return body


def test_a_real_cluster_serves_its_metrics_over_http_until_closed(tmp_path: Path) -> None:
    path = str(tmp_path / "lw")
    c = Cluster.real(path, brokers=2, log_dirs_per_broker=1, metrics_port=0)
    try:
        port = c.metrics_port
        assert port is not None and port > 0
        c.create_topic("t", partitions=1, replication_factor=2)
        c.produce("t", 0, [b"a", b"b"])
        assert c.run_until_idle(30_000)
        got = samples(_get(port))
        for bid in ("1", "2"):
            assert ("kafka_log_log_logendoffset", {"broker": bid, "topic": "t",
                                                   "partition": "0"}, 2.0) in got
            assert ("kafka_server_replicamanager_partitioncount", {"broker": bid}, 1.0) in got
    finally:
        c.close()
    with pytest.raises(urllib.error.URLError):
        _get(port)
    assert c.metrics_port is None
    off = Cluster.real(path, brokers=2, log_dirs_per_broker=1)
    try:
        assert off.metrics_port is None, "off unless asked for"
        taken = off.serve_metrics(0)
        with pytest.raises(ClusterError, match="already served"):
            off.serve_metrics(0)
    finally:
        off.close()
    blocker = Cluster.real(str(tmp_path / "other"), brokers=1, log_dirs_per_broker=1,
                           metrics_port=0)
    try:
        assert blocker.metrics_port is not None
        with pytest.raises(ClusterError, match="cannot serve metrics"):
            Cluster.real(path, brokers=1, log_dirs_per_broker=1,
                         metrics_port=blocker.metrics_port)
        Cluster.real(path, brokers=1, log_dirs_per_broker=1).close()  # nothing left held
    finally:
        blocker.close()
    assert taken > 0


def test_each_per_log_familys_help_names_its_kafka_mbean() -> None:
    c = Cluster.simulated(brokers=3, log_dirs_per_broker=1, seed=3)
    c.create_topic("t", partitions=2, replication_factor=2)
    assert c.run_until_idle()
    helps = {family.name: family.documentation for family in
             text_string_to_metric_families(c.metrics_exposition().decode())}
    for name, mbean in (("kafka_log_log_logstartoffset", m.LOG_START_OFFSET),
                        ("kafka_log_log_logendoffset", m.LOG_END_OFFSET),
                        ("kafka_log_log_size", m.LOG_SIZE)):
        assert helps[name] == mbean.format("<topic>", "<partition>")


def _flaky_sources(failures: int) -> m.MetricSources:
    """Sources whose dead-thread reading raises RuntimeError (a dict changed while iterated,
    as a scrape on another thread may see) ``failures`` times, then reads 0."""
    left = [failures]

    def racing() -> float:
        if left[0] > 0:
            left[0] -= 1
            raise RuntimeError("dictionary changed size during iteration")
        return 0.0

    def zero() -> float:
        return 0.0

    return m.MetricSources(
        failed_partitions=zero, alter_log_dirs_failed_partitions=zero, dead_threads=racing,
        max_lag=zero, under_replicated=zero, offline_replicas=zero, leader_count=zero,
        partition_count=zero, offline_log_dirs=zero, log_dirs=("/d1",),
        log_dir_offline=lambda d: 0.0)


@pytest.mark.parametrize("failures", [0, 1, 2])
def test_a_scrape_that_races_with_the_broker_is_read_again(failures: int) -> None:
    broker = m.BrokerMetrics(1, _flaky_sources(failures))
    got = samples(m.merged_exposition([broker]))
    assert ("kafka_server_replicafetchermanager_deadthreadcount",
            {"broker": "1", "clientId": "Replica"}, 0.0) in got


def test_a_scrape_failing_three_times_in_a_row_reports_the_error() -> None:
    broker = m.BrokerMetrics(1, _flaky_sources(3))
    with pytest.raises(RuntimeError, match="changed size"):
        m.merged_exposition([broker])
