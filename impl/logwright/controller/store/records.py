"""The controller's durable records: immutable dataclasses the metadata store keeps.

Each record asserts its own consistency on construction (a partition's leader is in its ISR, the
ISR and the adding and removing replicas lie within the replicas; broker epochs are assigned).
Imports only the ground floor (logwright.identity).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from logwright.identity import TopicPartition, Uuid

__all__ = [
    "ANY_LOG_DIR",
    "NO_CONTROLLER_EPOCH",
    "NO_LEADER",
    "BrokerRegistration",
    "ControllerRecord",
    "PartitionState",
    "PendingReassignment",
    "TopicDeletion",
    "TopicRecord",
    "lineage_in_order",
]


NO_LEADER = -1
"""``leader`` of a partition with no replica eligible to lead (offline)."""

ANY_LOG_DIR = "any"
"""A replica's log dir when the reassignment JSON states no preference."""

NO_CONTROLLER_EPOCH = 0
"""The controller epoch of a store no controller ever claimed; the first claim gets 1."""



@dataclass(frozen=True)
class ControllerRecord:
    """The active controller: its id (``controller-<id>``) and the epoch it claimed."""

    controller_id: int
    epoch: int


@dataclass(frozen=True)
class BrokerRegistration:
    """One broker's latest registration.

    ``fenced`` is set when the controller declared the broker dead (its session expired) and
    cleared when it registers again or heartbeats with this epoch; a new controller reads it to
    know which brokers were alive.
    """

    broker_id: int
    broker_epoch: int
    incarnation_id: Uuid
    log_dirs: tuple[str, ...]
    fenced: bool = False

    def __post_init__(self) -> None:
        assert self.broker_id >= 0, f"broker id {self.broker_id} is negative"
        assert self.broker_epoch >= 1, f"broker epoch {self.broker_epoch} was never assigned"


@dataclass(frozen=True)
class TopicRecord:
    """A topic: its id is new at every creation, so a re-created name has a different id."""

    name: str
    topic_id: Uuid
    partition_count: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...] = ()  # sorted (key, value) pairs

    def __post_init__(self) -> None:
        assert self.partition_count >= 1 and self.replication_factor >= 1
        assert list(self.configs) == sorted(dict(self.configs).items()), "configs sorted, unique"

    @property
    def config_map(self) -> dict[str, str]:
        """The topic configs as a dict."""
        return dict(self.configs)

    @staticmethod
    def configs_from(mapping: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
        """The canonical (sorted) form of a config mapping."""
        return tuple(sorted((mapping or {}).items()))


@dataclass(frozen=True)
class PartitionState:
    """The controller's state of one partition (what LeaderAndIsr carries).

    ``replicas`` is the assignment in preference order; during a reassignment it holds the old
    replicas followed by the ``adding_replicas``, and ``removing_replicas`` are the old ones that
    will go. ``target_log_dirs`` parallels ``replicas`` (empty: "any" for every replica).
    ``partition_epoch`` grows with every change; ``leader_epoch`` with every leader change (and at
    the end of a reassignment).

    Eligible leader replicas (KIP-966; docs/cluster.md, "Eligible leader replicas"): ``elr`` are
    replicas out of the ISR that still hold every committed record, because they left it while
    the ISR was smaller than min.insync.replicas and the high watermark cannot advance then.
    The ISR is empty only when no replica is eligible to lead (``leader`` is NO_LEADER); while
    the ISR and the ELR are both empty, ``recovery_log_ends`` collects, for a recovery election,
    what each replica reports: how far its log agrees with ``lineage``, the leader epoch of its
    last record and its log end offset; and ``leader_log_start_offset`` the highest log start
    offset they report: every leader's log
    starts there at least, so a recovery election never brings back records an acknowledged
    DeleteRecords removed while a replica still holds the deletion (start offsets only rise, and
    a later leader followed one that adopted it).

    ``lineage`` (docs/cluster.md, "Recovery elections and the lineage") is the leader epoch
    cache of the latest leader that told the controller its log as it took up its epoch: each
    epoch with the offset it begins at, the last that leader's epoch. Empty until one has. A
    leader's high watermark does not advance in an epoch before its lineage is recorded here,
    so every acknowledged record lies on it.
    """

    tp: TopicPartition
    topic_id: Uuid
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    target_log_dirs: tuple[str, ...] = ()
    elr: tuple[int, ...] = ()
    #: (broker, offset its log agrees with the lineage up to, last epoch, end offset)
    recovery_log_ends: tuple[tuple[int, int, int, int], ...] = ()
    leader_log_start_offset: int = 0
    lineage: tuple[tuple[int, int], ...] = ()  # (leader epoch, start offset), in order

    @property
    def lineage_epoch(self) -> int:
        """The leader epoch whose lineage is recorded (-1: none)."""
        return self.lineage[-1][0] if self.lineage else -1

    def __post_init__(self) -> None:
        replicas = set(self.replicas)
        assert self.replicas and len(replicas) == len(self.replicas), \
            f"{self.tp}: replicas {self.replicas} empty or duplicated"
        for name, members in (("ISR", self.isr), ("ELR", self.elr)):
            assert len(set(members)) == len(members) and set(members) <= replicas, \
                f"{self.tp}: {name} {members} not a set within replicas {self.replicas}"
        assert not set(self.isr) & set(self.elr), \
            f"{self.tp}: ISR {self.isr} and ELR {self.elr} overlap"
        assert not self.recovery_log_ends or not (self.isr or self.elr), \
            f"{self.tp}: recovery log ends {self.recovery_log_ends} beside ISR {self.isr} " \
            f"or ELR {self.elr}"
        assert {e[0] for e in self.recovery_log_ends} <= replicas, \
            f"{self.tp}: recovery log ends {self.recovery_log_ends} of other replicas"
        assert self.isr or self.leader == NO_LEADER, \
            f"{self.tp}: leader {self.leader} with an empty ISR"
        assert self.leader == NO_LEADER or self.leader in self.isr, \
            f"{self.tp}: leader {self.leader} not in ISR {self.isr}"
        assert set(self.adding_replicas) <= replicas and set(self.removing_replicas) <= replicas
        assert not set(self.adding_replicas) & set(self.removing_replicas)
        assert not self.target_log_dirs or len(self.target_log_dirs) == len(self.replicas)
        assert self.leader_epoch >= 0 and self.partition_epoch >= 0
        assert lineage_in_order(self.lineage), \
            f"{self.tp}: lineage {self.lineage} not in epoch and offset order"
        assert self.lineage_epoch <= self.leader_epoch, \
            f"{self.tp}: lineage of epoch {self.lineage_epoch} past leader epoch " \
            f"{self.leader_epoch}"

    def log_dir_for(self, broker_id: int) -> str:
        """The log dir ``broker_id`` should host this replica in ("any": no preference)."""
        if not self.target_log_dirs or broker_id not in self.replicas:
            return ANY_LOG_DIR
        return self.target_log_dirs[self.replicas.index(broker_id)]

    @property
    def reassigning(self) -> bool:
        """Whether a reassignment is under way (replicas are being added or removed)."""
        return bool(self.adding_replicas or self.removing_replicas)


@dataclass(frozen=True)
class PendingReassignment:
    """A reassignment not yet complete: where the partition's replicas (and dirs) should end up."""

    tp: TopicPartition
    target_replicas: tuple[int, ...]
    target_log_dirs: tuple[str, ...]

    def __post_init__(self) -> None:
        assert self.target_replicas and len(set(self.target_replicas)) == len(self.target_replicas)
        assert len(self.target_log_dirs) == len(self.target_replicas)


@dataclass(frozen=True)
class TopicDeletion:
    """A topic whose deletion started: StopReplica went out; the topic is not yet removed."""

    name: str
    topic_id: Uuid


def lineage_in_order(lineage: tuple[tuple[int, int], ...]) -> bool:
    """Whether ``lineage`` (leader epoch, start offset) pairs rise in epoch, and never fall in
    offset, as a leader epoch cache's entries do."""
    return all(a[0] < b[0] and a[1] <= b[1] for a, b in itertools.pairwise(lineage))
