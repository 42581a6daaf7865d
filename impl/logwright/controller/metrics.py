"""The controller's metrics, with Kafka's names where Kafka has them, through prometheus_client.

Read from the controller's state at collection time (gauges bound to functions), as the
broker's are (``logwright.broker.metrics``). Only the active controller reports non-zero
partition gauges, as in Kafka. The election counts are totals since this controller started
(Kafka's ``...PerSec`` meters expose the same total as their ``Count``).

- ``kafka.controller:type=KafkaController,name=OfflinePartitionsCount``: partitions with no
  leader (offline), topics being deleted left out.
- ``kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec``: unclean
  elections (a replica outside the ISR and the ELR led; records may be lost).
- ``kafka.controller:type=ControllerStats,name=ElectionFromEligibleLeaderReplicasPerSec``:
  elections from the ELR (KIP-966).
- ``logwright.controller:type=ControllerStats,name=RecoveryElectionsPerSec`` (logwright's own):
  recovery elections, after every replica reported its log (docs/cluster.md).
- ``logwright.controller:type=KafkaController,name=EligibleLeaderReplicasCount`` (logwright's
  own): the ELR members of every partition, summed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

OFFLINE_PARTITIONS = "kafka.controller:type=KafkaController,name=OfflinePartitionsCount"
UNCLEAN_ELECTIONS = "kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec"
ELR_ELECTIONS = ("kafka.controller:type=ControllerStats,"
                 "name=ElectionFromEligibleLeaderReplicasPerSec")
RECOVERY_ELECTIONS = "logwright.controller:type=ControllerStats,name=RecoveryElectionsPerSec"
ELR_COUNT = "logwright.controller:type=KafkaController,name=EligibleLeaderReplicasCount"

#: MBean -> (Prometheus name, the election kind counted, or None for a partition gauge).
_GAUGES: dict[str, tuple[str, str | None]] = {
    OFFLINE_PARTITIONS: ("kafka_controller_kafkacontroller_offlinepartitionscount", None),
    UNCLEAN_ELECTIONS: ("kafka_controller_controllerstats_uncleanleaderelectionspersec_count",
                        "unclean"),
    ELR_ELECTIONS: ("kafka_controller_controllerstats_electionfromeligibleleaderreplicaspersec"
                    "_count", "eligible leader replica"),
    RECOVERY_ELECTIONS: ("logwright_controller_controllerstats_recoveryelectionspersec_count",
                         "recovery"),
    ELR_COUNT: ("logwright_controller_kafkacontroller_eligibleleaderreplicascount", None),
}


def _count(elections: Callable[[], dict[str, int]], kind: str) -> float:
    return float(elections().get(kind, 0))


class ControllerMetrics:
    """The gauges of one controller, in their own registry."""

    def __init__(self, controller_id: int, elections: Callable[[], dict[str, int]],
                 offline_partitions: Callable[[], int],
                 eligible_leader_replicas: Callable[[], int]) -> None:
        self.controller_id = controller_id
        self.registry = CollectorRegistry(auto_describe=True)
        readers: dict[str, Callable[[], float]] = {
            OFFLINE_PARTITIONS: lambda: float(offline_partitions()),
            ELR_COUNT: lambda: float(eligible_leader_replicas()),
        }
        for mbean, (name, kind) in _GAUGES.items():
            gauge = Gauge(name, mbean, registry=self.registry)
            if kind is not None:
                gauge.set_function(partial(_count, elections, kind))
            else:
                gauge.set_function(readers[mbean])
        self._names = {mbean: name for mbean, (name, _) in _GAUGES.items()}

    def collector(self) -> Collector:
        """This controller's families, each sample labelled ``controller="<id>"``, as a
        collector another registry can hold (the cluster's exposition)."""
        return _Families(self.registry, self.controller_id)

    def snapshot(self) -> dict[str, float]:
        """Every metric's current value, keyed by its MBean name."""
        values = {sample.name: sample.value for family in self.registry.collect()
                  for sample in family.samples}
        return {mbean: float(values[name]) for mbean, name in self._names.items()}


class _Families(Collector):
    def __init__(self, registry: CollectorRegistry, controller_id: int) -> None:
        self._registry = registry
        self._label = str(controller_id)

    def collect(self) -> Iterable[Metric]:
        out = []
        for family in self._registry.collect():
            copy = Metric(family.name, family.documentation, family.type, family.unit)
            copy.samples = [sample._replace(labels={"controller": self._label, **sample.labels})
                            for sample in family.samples]
            out.append(copy)
        return out
