"""A broker's metrics, with Kafka's names, through prometheus_client.

Invariant upheld: every value is read from the broker's live state at collection time (gauges
bound to functions), so a metric can never disagree with the state it reports. Each broker has
its own ``CollectorRegistry``, so several brokers can share one process.

Prometheus names follow the JMX exporter's usual mapping of Kafka's MBeans (domain, type and name
lower-cased and joined by underscores; the remaining MBean keys become labels); the help text
carries the MBean name. ``snapshot()`` is keyed by the MBean name itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from prometheus_client import CollectorRegistry, Gauge, generate_latest

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

Reading = Callable[[], float]


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
        dir_gauge = Gauge("kafka_log_logmanager_logdirectoryoffline",
                          LOG_DIR_OFFLINE.format("<dir>") + " (1 when the dir is offline)",
                          ["logDirectory"], registry=self.registry)
        for path in sources.log_dirs:
            dir_gauge.labels(logDirectory=path).set_function(
                partial(sources.log_dir_offline, path))
            self._readers[LOG_DIR_OFFLINE.format(path)] = (
                "kafka_log_logmanager_logdirectoryoffline", {"logDirectory": path})

    def _plain(self, name: str, mbean: str, reading: Reading) -> None:
        gauge = Gauge(name, mbean, registry=self.registry)
        gauge.set_function(reading)
        self._readers[mbean] = (name, {})

    def _labelled(self, name: str, mbean: str, labels: dict[str, str], reading: Reading) -> None:
        gauge = Gauge(name, mbean, list(labels), registry=self.registry)
        gauge.labels(**labels).set_function(reading)
        self._readers[mbean] = (name, labels)

    def snapshot(self) -> dict[str, float]:
        """Every metric's current value, keyed by Kafka's MBean name, read through the registry."""
        out: dict[str, float] = {}
        for mbean, (name, labels) in self._readers.items():
            value = self.registry.get_sample_value(name, labels)
            assert value is not None, f"{name}{labels} is not registered"
            out[mbean] = float(value)
        return out

    def exposition(self) -> bytes:
        """The Prometheus text exposition of this broker's metrics."""
        return bytes(generate_latest(self.registry))
