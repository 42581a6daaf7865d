"""Errors: Kafka's error names and codes, and logwright's own precise local errors.

A failed call raises a typed error that carries the Kafka error name and code, so a caller that
knows Kafka can match on the same names it already knows (KAFKA-FACTS.md, "Error codes").
"""

from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    """Kafka protocol error codes used by logwright (the subset the five KIPs need)."""

    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    REPLICA_NOT_AVAILABLE = 9
    STALE_CONTROLLER_EPOCH = 11
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_TOPIC_EXCEPTION = 17
    TOPIC_AUTHORIZATION_FAILED = 29
    CLUSTER_AUTHORIZATION_FAILED = 31
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    REASSIGNMENT_IN_PROGRESS = 60
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    INVALID_UPDATE_VERSION = 95
    INCONSISTENT_TOPIC_ID = 103
    INELIGIBLE_REPLICA = 107


class LogwrightError(Exception):
    """Base of every error logwright raises on purpose."""


class KafkaError(LogwrightError):
    """An error with a Kafka error name and code, as a Kafka client would see it."""

    def __init__(self, error: Errors, message: str = "") -> None:
        self.error = error
        self.message = message
        super().__init__(f"{error.name} ({int(error)}): {message}" if message else error.name)

    @property
    def code(self) -> int:
        """The Kafka wire error code."""
        return int(self.error)

    @property
    def name(self) -> str:
        """The Kafka error name, for example ``OFFSET_OUT_OF_RANGE``."""
        return self.error.name


class OffsetOutOfRange(KafkaError):
    """A read or an offset request below the log start offset or above the log end offset."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.OFFSET_OUT_OF_RANGE, message)


class KafkaStorageError(KafkaError):
    """The log dir holding the partition is offline, or an I/O error occurred."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.KAFKA_STORAGE_ERROR, message)


class CorruptRecordError(KafkaError):
    """A record batch failed validation: the message names what is wrong and where."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.CORRUPT_MESSAGE, message)


class ClusterError(LogwrightError):
    """A call the cluster cannot make sense of (an unknown broker id, a real-only call...)."""


class InvalidArgument(ClusterError):
    """An argument of a public call has the wrong type or lies outside its documented range.

    Raised before anything changes: the cluster, its logs and (in simulation) its clock are as
    they were. Kafka itself would refuse such a call in the client, before any request is sent,
    so there is no Kafka error code to carry.
    """


class CheckpointError(LogwrightError):
    """A checkpoint file is malformed; the message names the file and the line."""


class LogDirNameError(LogwrightError):
    """A directory name in a log dir cannot be parsed as a partition directory."""


class UnexpectedAppendOffset(LogwrightError):
    """A follower append whose first offset lies below the log end offset of a non-empty log."""
