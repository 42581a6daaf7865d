"""Typed errors the controller raises, each carrying a Kafka error name and code.

Invariant upheld: a caller can tell every controller failure apart by type, and each carries the
Kafka code a Kafka client would see. Where Kafka has a dedicated code that ``Errors`` does not list
yet, the class says which one and uses the closest listed code (INVALID_REQUEST), so that adding
the code to ``logwright.errors.Errors`` later is a one-line change here and nowhere else.
"""

from __future__ import annotations

from logwright.errors import Errors, KafkaError


class StaleControllerEpoch(KafkaError):
    """A write by a controller whose epoch is no longer the current one (hazard 4).

    ``writer_epoch`` is the epoch the caller claimed; ``current_epoch`` the one in the store.
    """

    def __init__(self, writer_epoch: int, current_epoch: int) -> None:
        self.writer_epoch = writer_epoch
        self.current_epoch = current_epoch
        super().__init__(
            Errors.STALE_CONTROLLER_EPOCH,
            f"controller epoch {writer_epoch} is not the current one ({current_epoch}); "
            "the write was rejected")


class NotController(KafkaError):
    """The controller asked is not (or no longer) the active one.

    Kafka answers NOT_CONTROLLER (41).
    """

    def __init__(self, message: str) -> None:
        super().__init__(Errors.NOT_CONTROLLER, message)


class TopicAlreadyExists(KafkaError):
    """create_topic for a name that exists or is still being deleted.

    Kafka: TOPIC_ALREADY_EXISTS (36).
    """

    def __init__(self, message: str) -> None:
        super().__init__(Errors.TOPIC_ALREADY_EXISTS, message)


class InvalidPartitions(KafkaError):
    """A partition count below 1. Kafka: INVALID_PARTITIONS (37)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.INVALID_PARTITIONS, message)


class InvalidReplicationFactor(KafkaError):
    """A replication factor below 1 or above the number of live brokers.

    Kafka: INVALID_REPLICATION_FACTOR (38).
    """

    def __init__(self, message: str) -> None:
        super().__init__(Errors.INVALID_REPLICATION_FACTOR, message)


class InvalidReplicaAssignment(KafkaError):
    """An explicit assignment or reassignment naming unknown brokers, duplicates or no replicas.

    Kafka: INVALID_REPLICA_ASSIGNMENT (39).
    """

    def __init__(self, message: str) -> None:
        super().__init__(Errors.INVALID_REPLICA_ASSIGNMENT, message)
