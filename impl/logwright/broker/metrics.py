"""A broker's metrics, with Kafka's names, through prometheus_client.

Invariant upheld: every value is read from the broker's live state at collection time (gauges
bound to functions), so a metric can never disagree with the state it reports. Each broker has
its own ``CollectorRegistry``, so several brokers can share one process.

Prometheus names follow the JMX exporter's usual mapping of Kafka's MBeans (domain, type and name
lower-cased and joined by underscores; the remaining MBean keys become labels); the help text
carries the MBean name. ``snapshot()`` is keyed by the MBean name itself.

Per-log gauges (``kafka.log:type=Log,name=LogStartOffset|LogEndOffset|Size`` with ``topic`` and
``partition``) come from a collector that lists the broker's live logs at collection time, so a
log that is created, deleted or goes offline with its dir appears or disappears with it.

``exposition()`` adds a ``broker`` label (the broker id) to every sample, so the expositions of
several brokers can be merged into one scrape (``merged_exposition``) without clashing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

FAILED_PARTITIONS = ("kafka.server:type=ReplicaFetcherManager,name=FailedPartitionsCount,"
                     "clientId=Replica")
ALTER_LOG_DIRS_FAILED_PARTITIONS = ("kafka.server:type=ReplicaAlterLogDirsManager,"
                                    "name=FailedPartitionsCount,clientId=ReplicaAlterLogDirs")
DEAD_THREADS = "kafka.server:type=ReplicaFetcherManager,name=DeadThreadCount,clientId=Replica"
MAX_LAG = "kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica"
UNDER_REPLICATED = "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"
OFFLINE_REPLICAS = "kafka.server:type=ReplicaManager,name=OfflineReplicaCount"
LEADER_COUNT = "kafka.server:type=ReplicaManager,name=LeaderCount"
PARTITION_COUNT = "kafka.server:type=ReplicaManager,name=PartitionCount"
OFFLINE_LOG_DIRS = "kafka.log:type=LogManager,name=OfflineLogDirectoryCount"
LOG_DIR_OFFLINE = "kafka.log:type=LogManager,name=LogDirectoryOffline,logDirectory={}"
# KIP-370: the strays (orphan partitions) of the broker's online dirs, and their bytes.
ORPHAN_COUNT = "kafka.log:type=LogManager,name=OrphanLogPartitionCount"
ORPHAN_SIZE = "kafka.log:type=LogManager,name=OrphanLogPartitionSize"

LOG_START_OFFSET = "kafka.log:type=Log,name=LogStartOffset,topic={},partition={}"
LOG_END_OFFSET = "kafka.log:type=Log,name=LogEndOffset,topic={},partition={}"
LOG_SIZE = "kafka.log:type=Log,name=Size,topic={},partition={}"
#: MBean names of per-log gauges start with this (they are never summed over brokers).
PER_LOG_PREFIX = "kafka.log:type=Log,"
_PER_LOG = (("kafka_log_log_logstartoffset", LOG_START_OFFSET, "log_start_offset"),
            ("kafka_log_log_logendoffset", LOG_END_OFFSET, "log_end_offset"),
            ("kafka_log_log_size", LOG_SIZE, "size_bytes"))

Reading = Callable[[], float]


class LogReading(NamedTuple):
    """One live log's gauges, read at collection time."""

    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    size_bytes: int


def _no_logs() -> Sequence[LogReading]:
    return ()


def _zero() -> float:
    return 0.0


@dataclass(frozen=True)
class MetricSources:
    """Where each metric's value comes from."""

    failed_partitions: Reading
    alter_log_dirs_failed_partitions: Reading
    dead_threads: Reading
    max_lag: Reading
    under_replicated: Reading
    offline_replicas: Reading
    leader_count: Reading
    partition_count: Reading
    offline_log_dirs: Reading
    log_dirs: tuple[str, ...]
    log_dir_offline: Callable[[str], float]
    logs: Callable[[], Sequence[LogReading]] = _no_logs
    orphan_count: Reading = _zero
    orphan_size: Reading = _zero


class _LogCollector(Collector):
    """The per-log gauges of the logs alive at collection time."""

    def __init__(self, logs: Callable[[], Sequence[LogReading]]) -> None:
        self._logs = logs

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(name, mbean.format("<topic>", "<partition>"),
                                  labels=["topic", "partition"])
                for name, mbean, _ in _PER_LOG]

    def collect(self) -> Iterable[Metric]:
        readings = sorted(self._logs())
        for name, mbean, attr in _PER_LOG:
            family = GaugeMetricFamily(name, mbean.format("<topic>", "<partition>"),
                                       labels=["topic", "partition"])
            for r in readings:
                family.add_metric([r.topic, str(r.partition)], float(getattr(r, attr)))
            yield family


def with_label(families: Iterable[Metric], name: str, value: str) -> Iterator[Metric]:
    """Copies of ``families`` with label ``name=value`` first on every sample."""
    for family in families:
        copy = Metric(family.name, family.documentation, family.type, family.unit)
        copy.samples = [sample._replace(labels={name: value, **sample.labels})
                        for sample in family.samples]
        yield copy


def merged_exposition(sources: Iterable[BrokerMetrics]) -> bytes:
    """One Prometheus text exposition of several brokers: one family per metric name, every
    sample carrying its ``broker`` label."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Merged(lambda: list(sources)))
    return bytes(generate_latest(registry))


class _Merged(Collector):
    """Every sample of every broker returned by ``brokers()``, merged by metric name."""

    def __init__(self, brokers: Callable[[], Sequence[BrokerMetrics]]) -> None:
        self._brokers = brokers

    def collect(self) -> Iterable[Metric]:
        # An HTTP scrape runs on its own thread while the brokers run on the caller's: a
        # reading that iterates a dict the broker is changing may raise; the next try reads
        # a consistent value, so a scrape never fails for it.
        for attempt in range(3):
            try:
                return self._collect_once()
            except RuntimeError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _collect_once(self) -> list[Metric]:
        merged: dict[str, Metric] = {}
        for metrics in self._brokers():
            for family in metrics.labelled_families():
                into = merged.get(family.name)
                if into is None:
                    merged[family.name] = family
                else:
                    into.samples.extend(family.samples)
        return [merged[name] for name in sorted(merged)]


def merged_collector(brokers: Callable[[], Sequence[BrokerMetrics]]) -> Collector:
    """A collector of every broker that ``brokers()`` returns at collection time, with their
    ``broker`` labels (register it in a registry served over HTTP)."""
    return _Merged(brokers)


class BrokerMetrics:
    """The gauges of one broker, in their own registry."""

    def __init__(self, broker_id: int, sources: MetricSources) -> None:
        self.broker_id = broker_id
        self.registry = CollectorRegistry(auto_describe=True)
        self._readers: dict[str, tuple[str, dict[str, str]]] = {}
        self._labelled("kafka_server_replicafetchermanager_failedpartitionscount",
                       FAILED_PARTITIONS, {"clientId": "Replica"}, sources.failed_partitions)
        self._labelled("kafka_server_replicaalterlogdirsmanager_failedpartitionscount",
                       ALTER_LOG_DIRS_FAILED_PARTITIONS, {"clientId": "ReplicaAlterLogDirs"},
                       sources.alter_log_dirs_failed_partitions)
        self._labelled("kafka_server_replicafetchermanager_deadthreadcount", DEAD_THREADS,
                       {"clientId": "Replica"}, sources.dead_threads)
        self._labelled("kafka_server_replicafetchermanager_maxlag", MAX_LAG,
                       {"clientId": "Replica"}, sources.max_lag)
        self._plain("kafka_server_replicamanager_underreplicatedpartitions", UNDER_REPLICATED,
                    sources.under_replicated)
        self._plain("kafka_server_replicamanager_offlinereplicacount", OFFLINE_REPLICAS,
                    sources.offline_replicas)
        self._plain("kafka_server_replicamanager_leadercount", LEADER_COUNT,
                    sources.leader_count)
        self._plain("kafka_server_replicamanager_partitioncount", PARTITION_COUNT,
                    sources.partition_count)
        self._plain("kafka_log_logmanager_offlinelogdirectorycount", OFFLINE_LOG_DIRS,
                    sources.offline_log_dirs)
        self._plain("kafka_log_logmanager_orphanlogpartitioncount", ORPHAN_COUNT,
                    sources.orphan_count)
        self._plain("kafka_log_logmanager_orphanlogpartitionsize", ORPHAN_SIZE,
                    sources.orphan_size)
        dir_gauge = Gauge("kafka_log_logmanager_logdirectoryoffline",
                          LOG_DIR_OFFLINE.format("<dir>") + " (1 when the dir is offline)",
                          ["logDirectory"], registry=self.registry)
        for path in sources.log_dirs:
            dir_gauge.labels(logDirectory=path).set_function(
                partial(sources.log_dir_offline, path))
            self._readers[LOG_DIR_OFFLINE.format(path)] = (
                "kafka_log_logmanager_logdirectoryoffline", {"logDirectory": path})
        self._logs = sources.logs
        self.registry.register(_LogCollector(sources.logs))

    def _plain(self, name: str, mbean: str, reading: Reading) -> None:
        gauge = Gauge(name, mbean, registry=self.registry)
        gauge.set_function(reading)
        self._readers[mbean] = (name, {})

    def _labelled(self, name: str, mbean: str, labels: dict[str, str], reading: Reading) -> None:
        gauge = Gauge(name, mbean, list(labels), registry=self.registry)
        gauge.labels(**labels).set_function(reading)
        self._readers[mbean] = (name, labels)

    def snapshot(self) -> dict[str, float]:
        """Every metric's current value, keyed by Kafka's MBean name, read through the registry
        in one collection (per-log gauges keyed ``...,topic=<t>,partition=<p>``)."""
        samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for family in self.registry.collect():
            for sample in family.samples:
                samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
        out: dict[str, float] = {}
        for mbean, (name, labels) in self._readers.items():
            value = samples.get((name, tuple(sorted(labels.items()))))
            assert value is not None, f"{name}{labels} is not registered"
            out[mbean] = float(value)
        for (name, pairs), value in samples.items():
            for per_log_name, mbean, _ in _PER_LOG:
                if name == per_log_name:
                    label = dict(pairs)
                    out[mbean.format(label["topic"], label["partition"])] = float(value)
        return out

    def labelled_families(self) -> list[Metric]:
        """This broker's metric families, each sample labelled ``broker="<id>"``."""
        return list(with_label(self.registry.collect(), "broker", str(self.broker_id)))

    def exposition(self) -> bytes:
        """The Prometheus text exposition of this broker's metrics, with its ``broker`` label."""
        return merged_exposition([self])
