"""Errors: Kafka's error names and codes, and logwright's own precise local errors.

A failed call raises a typed error that carries the Kafka error name and code, so a caller that
knows Kafka can match on the same names it already knows (docs/kafka-compatibility.md, "Wire
APIs and error codes").
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import Final


class Errors(IntEnum):
    """Kafka protocol error codes used by logwright (the subset the five KIPs need)."""

    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_BATCH_TOO_LARGE = 18
    TOPIC_AUTHORIZATION_FAILED = 29
    CLUSTER_AUTHORIZATION_FAILED = 31
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
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
    UNKNOWN_TOPIC_ID = 100
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

    @staticmethod
    def of(error: Errors, message: str = "") -> KafkaError:
        """The most specific error type for ``error``: ``OffsetOutOfRange`` for
        OFFSET_OUT_OF_RANGE and so on, plain ``KafkaError`` where no subclass exists."""
        assert error is not Errors.NONE, "NONE is not an error"
        specific = _SPECIFIC.get(error)
        return specific(message) if specific is not None else KafkaError(error, message)

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


class InvalidConfig(KafkaError):
    """A config name Kafka (or logwright) does not know, or a value of the wrong type or out of
    range: INVALID_CONFIG (40). ``key`` names the config, ``reason`` says what is wrong."""

    def __init__(self, key: str, value: object, reason: str, where: str = "") -> None:
        self.key = key
        self.value = value
        self.reason = reason
        prefix = f"{where}: " if where else ""
        shown = f"{key}={value!r}" if value is not None else key
        super().__init__(Errors.INVALID_CONFIG, f"{prefix}{shown}: {reason}")


class MessageTooLarge(KafkaError):
    """A record batch larger than the topic's max.message.bytes: MESSAGE_TOO_LARGE (10)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.MESSAGE_TOO_LARGE, message)


class RecordBatchTooLarge(KafkaError):
    """A record batch larger than the topic's segment.bytes: RECORD_BATCH_TOO_LARGE (18)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.RECORD_BATCH_TOO_LARGE, message)


class UnknownTopicOrPartition(KafkaError):
    """The topic or partition does not exist (or this broker does not know of it yet)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.UNKNOWN_TOPIC_OR_PARTITION, message)


class LeaderNotAvailable(KafkaError):
    """The partition has no leader at the moment (an election is under way)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.LEADER_NOT_AVAILABLE, message)


class NotLeaderOrFollower(KafkaError):
    """The broker asked is not the partition's leader (the client's metadata is stale)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.NOT_LEADER_OR_FOLLOWER, message)


class RequestTimedOut(KafkaError):
    """No answer in time: a request's timeout, or a call's overall deadline, passed."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.REQUEST_TIMED_OUT, message)


class NotEnoughReplicas(KafkaError):
    """acks=all refused before the append: the ISR is smaller than min.insync.replicas."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.NOT_ENOUGH_REPLICAS, message)


class TopicAuthorizationFailed(KafkaError):
    """The principal may not perform the operation on the topic."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.TOPIC_AUTHORIZATION_FAILED, message)


class InvalidRequest(KafkaError):
    """A request (or a call's arguments) Kafka would refuse as malformed."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.INVALID_REQUEST, message)


class FencedLeaderEpoch(KafkaError):
    """The request names an older leader epoch than the leader's (the asker is behind)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.FENCED_LEADER_EPOCH, message)


class UnknownLeaderEpoch(KafkaError):
    """The request names a newer leader epoch than the broker knows (the broker is behind)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.UNKNOWN_LEADER_EPOCH, message)


NO_ERROR: Final = Errors.NONE
"""``Errors.NONE``, for the paths run per message. On Python 3.11 an enum member read off its
class takes a slow path (``EnumType.__getattr__`` keeps the interpreter from specialising the
lookup: about 65 ns more than a global), thousands of times a second there; those paths read
members bound to globals such as this one instead."""

_SPECIFIC: dict[Errors, Callable[[str], KafkaError]] = {
    Errors.OFFSET_OUT_OF_RANGE: OffsetOutOfRange,
    Errors.KAFKA_STORAGE_ERROR: KafkaStorageError,
    Errors.CORRUPT_MESSAGE: CorruptRecordError,
    Errors.UNKNOWN_TOPIC_OR_PARTITION: UnknownTopicOrPartition,
    Errors.LEADER_NOT_AVAILABLE: LeaderNotAvailable,
    Errors.NOT_LEADER_OR_FOLLOWER: NotLeaderOrFollower,
    Errors.REQUEST_TIMED_OUT: RequestTimedOut,
    Errors.NOT_ENOUGH_REPLICAS: NotEnoughReplicas,
    Errors.TOPIC_AUTHORIZATION_FAILED: TopicAuthorizationFailed,
    Errors.INVALID_REQUEST: InvalidRequest,
    Errors.FENCED_LEADER_EPOCH: FencedLeaderEpoch,
    Errors.UNKNOWN_LEADER_EPOCH: UnknownLeaderEpoch,
    Errors.MESSAGE_TOO_LARGE: MessageTooLarge,
    Errors.RECORD_BATCH_TOO_LARGE: RecordBatchTooLarge,
}
"""Errors that have their own type, for ``KafkaError.of``."""


class ClusterError(LogwrightError):
    """A call the cluster cannot make sense of (an unknown broker id, a real-only call, a call
    after close, an invalid client config...)."""


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


class DataDirError(LogwrightError):
    """A data dir (a log dir, or a cluster's data path) cannot be used by this process."""


class DataDirLockedError(DataDirError):
    """Another process, or another ``Cluster``/broker in this one, holds the dir's ``.lock``.

    Raised before anything is written under the dir.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"{path} is in use: its .lock is held by another broker or cluster "
                         "(a second process on the same data dir); nothing was written")


class DataDirMismatchError(DataDirError):
    """A log dir's ``meta.properties`` belongs to another cluster or another node.

    Like Kafka, the broker refuses to start, before writing anything to any of its log dirs.
    """
