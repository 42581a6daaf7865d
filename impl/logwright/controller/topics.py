"""Topics: create (with new topic ids), grow, delete (StopReplica, then removal), and configs.

Invariant upheld: topic configs are validated (logwright.configs) before they are stored, stored
in the topic record with the same epoch-conditional write as everything else, and carried in
every LeaderAndIsr and UpdateMetadata partition state. A deletion is recorded before its
StopReplica goes out, so a controller that takes over mid-way finishes it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from logwright.configs import TOPIC_CONFIGS, canonical_string, parse_topic_configs
from logwright.controller.control import LEADER_DURING_DELETE
from logwright.controller.core import decision
from logwright.controller.election import Election
from logwright.controller.errors import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    TopicAlreadyExists,
)
from logwright.controller.store import MetadataDelta, PartitionState, TopicDeletion, TopicRecord
from logwright.errors import Errors, InvalidConfig, KafkaError
from logwright.identity import TopicPartition, Uuid, validate_topic
from logwright.protocol.messages import EPOCH_DURING_DELETE, StopReplicaPartition

__all__ = ["Topics"]

log = logging.getLogger(__name__)


class Topics(Election):
    """The room of topic creation, deletion and configs."""

    @decision
    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: Mapping[str, object] | None = None,
                     assignment: Sequence[Sequence[int]] | None = None) -> Uuid:
        """Create topic ``name`` with a new topic id; returns the id.

        Without ``assignment`` the replicas go round-robin over the live brokers from a start
        offset drawn from the rng; with it, ``assignment[p]`` lists partition p's replicas.
        ``configs`` are topic configs by Kafka name (string values as Kafka takes them, or Python
        values of the config's type); they are validated and stored in canonical string form.
        Errors: INVALID_TOPIC_EXCEPTION (bad name), TopicAlreadyExists, InvalidConfig (an
        unknown config or a bad value), InvalidPartitions, InvalidReplicationFactor (below 1 or
        above the live brokers), InvalidReplicaAssignment. As in Kafka, min.insync.replicas
        above the replication factor is accepted (producing with acks=all then fails with
        NOT_ENOUGH_REPLICAS).
        """
        self._require_active()
        validate_topic(name)
        existing = self.store.topic(name)
        if existing is not None:
            deleting = name in self._deleting()
            raise TopicAlreadyExists(f"topic {name!r} already exists"
                                     + (" and is being deleted" if deleting else ""))
        config_pairs = self._canonical_configs(configs or {})
        if not isinstance(partitions, int) or isinstance(partitions, bool):
            raise InvalidPartitions(f"topic {name!r}: partitions must be an int, not "
                                    f"{type(partitions).__name__}")
        if not isinstance(replication_factor, int) or isinstance(replication_factor, bool):
            raise InvalidReplicationFactor(f"topic {name!r}: replication factor must be an int, "
                                           f"not {type(replication_factor).__name__}")
        if partitions < 1:
            raise InvalidPartitions(f"topic {name!r}: {partitions} partitions; at least 1")
        if replication_factor < 1:
            raise InvalidReplicationFactor(
                f"topic {name!r}: replication factor {replication_factor}; at least 1")
        replica_lists = self._replica_lists(name, partitions, replication_factor, assignment)
        taken = {t.topic_id for t in self.store.topics()}
        topic_id = Uuid.from_random(self.id_rng)
        while topic_id in taken:
            topic_id = Uuid.from_random(self.id_rng)
        record = TopicRecord(name, topic_id, partitions, replication_factor, config_pairs)
        states = []
        for p, replicas in enumerate(replica_lists):
            isr = tuple(r for r in replicas if r in self._session_deadline_ms)
            states.append(PartitionState(TopicPartition(name, p), topic_id, replicas, isr,
                                         leader=isr[0], leader_epoch=0, partition_epoch=0))
        self._commit(MetadataDelta(topics=[record], partitions=states))
        log.info("%s created topic %s (id %s, %d partitions)", self.node_id, name, topic_id,
                 partitions)
        self._send_leader_and_isr(states, new=[s.tp for s in states])
        self._send_update_metadata(states)
        return topic_id

    @decision
    def create_partitions(self, name: str, total: int,
                          assignment: Sequence[Sequence[int]] | None = None) -> tuple[int, ...]:
        """Grow topic ``name`` to ``total`` partitions (Kafka's CreatePartitions); returns the
        new partition numbers. The existing partitions are untouched; each new one gets the
        topic's replication factor, round-robin over the live brokers (or ``assignment[i]`` for
        the i-th new partition), a leader and leader epoch 0, in one store write, then
        LeaderAndIsr (new) and UpdateMetadata. Errors, with nothing changed:
        UNKNOWN_TOPIC_OR_PARTITION (no such topic, or it is being deleted), InvalidPartitions
        (``total`` not above the current count, or above the cap), InvalidReplicationFactor
        (fewer live brokers than the replication factor), InvalidReplicaAssignment.
        """
        self._require_active()
        record = self.store.topic(name)
        if record is None or name in self._deleting():
            raise KafkaError.of(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        if not isinstance(total, int) or isinstance(total, bool):
            raise InvalidPartitions(f"topic {name!r}: the partition count must be an int, not "
                                    f"{type(total).__name__}")
        current = record.partition_count
        if total <= current:
            raise InvalidPartitions(f"topic {name!r} has {current} partitions; the new count "
                                    f"{total} must be larger (partitions are never removed)")
        added = total - current
        replica_lists = self._replica_lists(name, added, record.replication_factor, assignment)
        states = []
        for i, replicas in enumerate(replica_lists):
            isr = tuple(r for r in replicas if r in self._session_deadline_ms)
            states.append(PartitionState(TopicPartition(name, current + i), record.topic_id,
                                         replicas, isr, leader=isr[0], leader_epoch=0,
                                         partition_epoch=0))
        self._commit(MetadataDelta(topics=[replace(record, partition_count=total)],
                                   partitions=states))
        log.info("%s grew topic %s from %d to %d partitions", self.node_id, name, current, total)
        self._send_leader_and_isr(states, new=[s.tp for s in states])
        self._send_update_metadata(states)
        return tuple(s.tp.partition for s in states)

    def _replica_lists(self, name: str, partitions: int, replication_factor: int,
                       assignment: Sequence[Sequence[int]] | None) -> list[tuple[int, ...]]:
        """Each partition's replicas: ``assignment`` checked, else round-robin over the live."""
        if assignment is not None:
            return self._check_assignment(name, assignment, partitions, replication_factor)
        live = self.live_brokers()
        if replication_factor > len(live):
            raise InvalidReplicationFactor(
                f"topic {name!r}: replication factor {replication_factor} is larger than "
                f"the {len(live)} live brokers {list(live)}")
        return self._round_robin(live, partitions, replication_factor)

    @staticmethod
    def _canonical_configs(configs: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
        parsed = parse_topic_configs(configs)
        return TopicRecord.configs_from({k: canonical_string(v) for k, v in parsed.items()})

    @decision
    def alter_topic_configs(self, name: str, set: Mapping[str, object] | None = None,
                            delete: Iterable[str] = ()) -> dict[str, str]:
        """Change topic ``name``'s config overrides incrementally (``kafka-configs.sh --alter
        --add-config k=v --delete-config k``): ``set`` adds or replaces overrides, ``delete``
        removes them (the broker default applies again). Returns the overrides now stored.

        The new overrides are stored (conditional on the controller epoch), then an
        UpdateMetadata carrying them goes to every live broker; a broker that is down gets them
        in the FULL LeaderAndIsr of its next registration. Errors, with nothing changed:
        UNKNOWN_TOPIC_OR_PARTITION (no such topic, or it is being deleted), InvalidConfig (an
        unknown name in ``set`` or ``delete``, or a bad value), INVALID_REQUEST (a name both set
        and deleted).
        """
        self._require_active()
        record = self.store.topic(name)
        if record is None or name in self._deleting():
            raise KafkaError.of(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        additions = dict(self._canonical_configs(set or {}))
        removals = [key.strip() if isinstance(key, str) else key for key in delete]
        for key in removals:
            if not isinstance(key, str) or key not in TOPIC_CONFIGS:
                raise InvalidConfig(str(key), None, "unknown topic config")
            if key in additions:
                raise KafkaError.of(Errors.INVALID_REQUEST,
                                 f"topic config {key} is both set and deleted")
        configs = {k: v for k, v in record.configs if k not in removals}
        configs.update(additions)
        new = replace(record, configs=TopicRecord.configs_from(configs))
        if new == record:
            return new.config_map
        states = self.store.partitions(name)
        changes = [c for st in states if (c := self._elect(st, new)) is not None]
        self._commit(MetadataDelta(topics=[new], partitions=changes))
        log.info("%s altered the configs of topic %s: %s", self.node_id, name, new.config_map)
        if changes:
            self._send_leader_and_isr(changes)
        self._send_update_metadata(self.store.partitions(name))
        return new.config_map

    def describe_topic_configs(self, name: str) -> dict[str, str]:
        """Topic ``name``'s stored config overrides (canonical strings, by Kafka name);
        UNKNOWN_TOPIC_OR_PARTITION if there is no such topic."""
        return self.topic(name).config_map

    def _round_robin(self, live: Sequence[int], partitions: int,
                     replication_factor: int) -> list[tuple[int, ...]]:
        # Partition p starts at live[(start + p) % n] and takes the next brokers in id order, so
        # leaders (first replicas) spread evenly; the rng picks where the rotation starts.
        n = len(live)
        start = self.rng.randrange(n)
        return [tuple(live[(start + p + k) % n] for k in range(replication_factor))
                for p in range(partitions)]

    def _check_assignment(self, name: str, assignment: Sequence[Sequence[int]], partitions: int,
                          replication_factor: int) -> list[tuple[int, ...]]:
        if len(assignment) != partitions:
            raise InvalidReplicaAssignment(f"topic {name!r}: assignment lists {len(assignment)} "
                                           f"partitions, expected {partitions}")
        registered = {b.broker_id for b in self.store.brokers()}
        lists = []
        for p, given in enumerate(assignment):
            replicas = tuple(given)
            if len(replicas) != replication_factor:
                raise InvalidReplicaAssignment(
                    f"topic {name!r} partition {p}: {len(replicas)} replicas, expected the "
                    f"replication factor {replication_factor}")
            if len(set(replicas)) != len(replicas):
                raise InvalidReplicaAssignment(
                    f"topic {name!r} partition {p}: duplicate replicas {list(replicas)}")
            unknown = [r for r in replicas if r not in registered]
            if unknown:
                raise InvalidReplicaAssignment(
                    f"topic {name!r} partition {p}: unknown broker ids {unknown}")
            if not any(r in self._session_deadline_ms for r in replicas):
                raise InvalidReplicaAssignment(
                    f"topic {name!r} partition {p}: none of the replicas {list(replicas)} is "
                    "alive, so no leader can be elected")
            lists.append(replicas)
        return lists

    @decision
    def delete_topic(self, name: str) -> None:
        """Delete topic ``name``: StopReplica(delete, leader epoch -2) to every live replica,
        then remove the topic from the store (its name may be created again at once, with a new
        id). A replica that misses the StopReplica learns of the deletion from the FULL
        LeaderAndIsr it gets on its next registration (the partition is then a stray).
        """
        self._require_active()
        record = self.store.topic(name)
        if record is None:
            raise KafkaError.of(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        deletion = TopicDeletion(name, record.topic_id)
        if name not in self._deleting():
            self._commit(MetadataDelta(deletions=[deletion]))
        self._finish_deletion(deletion)

    def _finish_deletion(self, deletion: TopicDeletion) -> None:
        states = self.store.partitions(deletion.name)
        per_broker: dict[int, list[StopReplicaPartition]] = {}
        for state in states:
            for broker_id in state.replicas:
                per_broker.setdefault(broker_id, []).append(StopReplicaPartition(
                    state.tp, EPOCH_DURING_DELETE, delete_partition=True,
                    topic_id=state.topic_id))
        # Recorded first, so a controller that takes over mid-way finishes the deletion; the
        # StopReplica goes out before the removal so that no window exists in which the name is
        # free but replicas still serve the old topic id without having been told.
        for broker_id in sorted(per_broker):
            if broker_id in self._session_deadline_ms:
                self._send_stop_replica(broker_id, per_broker[broker_id])
        self._commit(MetadataDelta(removed_topics=[deletion.name]))
        self._offline_replicas = {(tp, b) for tp, b in self._offline_replicas
                                  if tp.topic != deletion.name}
        log.info("%s deleted topic %s (id %s)", self.node_id, deletion.name, deletion.topic_id)
        self._send_update_metadata(states, leader_override=LEADER_DURING_DELETE)

