"""Message types. Names follow Kafka's request and field names (docs/kafka-compatibility.md,
"Wire APIs and error codes")."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from logwright.errors import Errors
from logwright.frozen import fast_init
from logwright.identity import TopicPartition, Uuid

__all__ = [
    "CONSUMER_REPLICA_ID",
    "DELETE_TO_HIGH_WATERMARK",
    "EARLIEST_TIMESTAMP",
    "EPOCH_DURING_DELETE",
    "LATEST_TIMESTAMP",
    "NO_EPOCH",
    "AlterPartitionRequest",
    "AlterPartitionResponse",
    "AlterReplicaLogDirsDir",
    "AlterReplicaLogDirsPartitionResult",
    "AlterReplicaLogDirsRequest",
    "AlterReplicaLogDirsResponse",
    "AlterReplicaLogDirsTopic",
    "AlterReplicaLogDirsTopicResult",
    "BrokerHeartbeat",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "DeleteRecordsPartition",
    "DeleteRecordsPartitionResult",
    "DeleteRecordsRequest",
    "DeleteRecordsResponse",
    "DeleteRecordsTopic",
    "DeleteRecordsTopicResult",
    "DescribeLogDirsPartition",
    "DescribeLogDirsRequest",
    "DescribeLogDirsResponse",
    "DescribeLogDirsResult",
    "DescribeLogDirsStray",
    "DescribeLogDirsTopic",
    "FetchPartition",
    "FetchPartitionData",
    "FetchRequest",
    "FetchResponse",
    "LeaderAndIsrPartitionState",
    "LeaderAndIsrRequest",
    "LeaderAndIsrResponse",
    "LeaderAndIsrType",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "Message",
    "MetadataBroker",
    "MetadataPartition",
    "MetadataRequest",
    "MetadataResponse",
    "MetadataTopic",
    "NodeId",
    "OffsetForLeaderEpochPartition",
    "OffsetForLeaderEpochRequest",
    "OffsetForLeaderEpochResponse",
    "OffsetForLeaderEpochResult",
    "PartitionError",
    "ProducePartitionResult",
    "ProduceRequest",
    "ProduceResponse",
    "RecordLineageRequest",
    "RecordLineageResponse",
    "ReplicaReport",
    "StopReplicaPartition",
    "StopReplicaRequest",
    "StopReplicaResponse",
    "UpdateMetadataRequest",
    "UpdateMetadataResponse",
    "control_partitions",
    "replica_reports_by_partition",
]

NodeId = str  # "controller-<n>", "broker-<n>", "client-<n>"

CONSUMER_REPLICA_ID = -1  # a Fetch from a consumer, not a follower
NO_EPOCH = -1  # "no epoch": broker epoch -1 is never fenced (KIP-380)
EPOCH_DURING_DELETE = -2  # StopReplica leader epoch during topic deletion: bypasses the check
EARLIEST_TIMESTAMP = -2  # ListOffsets: the log start offset
LATEST_TIMESTAMP = -1  # ListOffsets: the high watermark (committed end) for consumers


@dataclass(frozen=True)
class Message:
    """Base of every message; ``correlation_id`` pairs a response with its request."""

    correlation_id: int


@dataclass(frozen=True)
class PartitionError:
    """A per-partition result: one bad partition does not fail the rest."""

    tp: TopicPartition
    error: Errors = Errors.NONE


# ---- controller -> broker ------------------------------------------------------------------


class LeaderAndIsrType(enum.IntEnum):
    """LeaderAndIsr v5 ``Type``: FULL carries every partition the broker must host (KIP-550's
    containsAllReplicas)."""

    UNKNOWN = 0
    INCREMENTAL = 1
    FULL = 2


@dataclass(frozen=True)
class LeaderAndIsrPartitionState:
    """What the controller says about one partition."""

    tp: TopicPartition
    topic_id: Uuid
    controller_epoch: int
    leader: int  # broker id; -1 for none
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    is_new: bool = False
    # Reassignment with log dirs (KIP-113): the dir this broker should use, "any" for none.
    log_dir: str = "any"
    # The topic's config overrides (Kafka names, canonical string values, sorted), as stored by
    # the controller when the message was built. A broker applies the ones of the newest message
    # it accepted (controller epoch, then correlation id): delivered with every LeaderAndIsr
    # (so a log is never created with a stale config) and every UpdateMetadata (so a change
    # reaches every broker hosting the topic).
    topic_configs: tuple[tuple[str, str], ...] = ()
    # The log start offset the leader's log must have at least (a logwright extension,
    # PartitionState.leader_log_start_offset): the highest any replica reported to a recovery
    # election.
    leader_log_start_offset: int = 0


@dataclass(frozen=True)
class LeaderAndIsrRequest(Message):
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    type: LeaderAndIsrType
    partition_states: tuple[LeaderAndIsrPartitionState, ...]
    live_leaders: tuple[int, ...] = ()
    principal: str = "User:ANONYMOUS"  # the session principal the authorizer checks


@dataclass(frozen=True)
class LeaderAndIsrResponse(Message):
    error: Errors
    partition_errors: tuple[PartitionError, ...] = ()


@dataclass(frozen=True)
class StopReplicaPartition:
    tp: TopicPartition
    leader_epoch: int  # EPOCH_DURING_DELETE (-2) bypasses the fencing check
    delete_partition: bool
    # The topic id the controller means (Uuid.ZERO: unknown). A broker whose log of this name has
    # another id (the topic was deleted and re-created) must leave that log alone.
    topic_id: Uuid = Uuid.ZERO


@dataclass(frozen=True)
class StopReplicaRequest(Message):
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[StopReplicaPartition, ...]
    principal: str = "User:ANONYMOUS"  # the session principal the authorizer checks


def control_partitions(request: Message) -> list[tuple[TopicPartition, int, Uuid]] | None:
    """``(partition, leader epoch, topic id)`` of each partition a LeaderAndIsr or StopReplica
    names, in request order (a partition may be named twice); None for any other message."""
    if isinstance(request, LeaderAndIsrRequest):
        return [(s.tp, s.leader_epoch, s.topic_id) for s in request.partition_states]
    if isinstance(request, StopReplicaRequest):
        return [(p.tp, p.leader_epoch, p.topic_id) for p in request.partitions]
    return None


@dataclass(frozen=True)
class StopReplicaResponse(Message):
    error: Errors
    partition_errors: tuple[PartitionError, ...] = ()


@dataclass(frozen=True)
class UpdateMetadataRequest(Message):
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: tuple[LeaderAndIsrPartitionState, ...]
    live_brokers: tuple[int, ...]
    principal: str = "User:ANONYMOUS"  # the session principal the authorizer checks
    #: UpdateMetadata v8's ``Type`` (KIP-866): FULL names every partition of every topic the
    #: cluster has, so a topic the cache holds and the request does not name was deleted.
    update_type: LeaderAndIsrType = LeaderAndIsrType.INCREMENTAL


@dataclass(frozen=True)
class UpdateMetadataResponse(Message):
    error: Errors


# ---- broker -> controller ------------------------------------------------------------------


@dataclass(frozen=True)
class ReplicaReport:
    """What a registering broker says of one replica it loaded (unclean-shutdown detection,
    KIP-966): whether its log dir was shut down cleanly, and where its log ends (the leader
    epoch of its last record, -1 for none, and its log end offset)."""

    tp: TopicPartition
    topic_id: Uuid | None
    last_epoch: int
    end_offset: int
    clean: bool
    #: Its log start offset: a recovery election's leader starts its log there at least, so that
    #: no records an acknowledged DeleteRecords removed come back (PartitionState).
    log_start_offset: int = 0
    #: Its leader epoch cache: each epoch with the offset it begins at, in order. The controller
    #: works out from it how far the log agrees with the partition's lineage (a recovery
    #: election ranks that first: docs/cluster.md, "Recovery elections and the lineage").
    epochs: tuple[tuple[int, int], ...] = ()


def replica_reports_by_partition(reports: Iterable[ReplicaReport], topic_ids: Mapping[
        TopicPartition, Uuid | None]) -> dict[TopicPartition, ReplicaReport]:
    """Each partition's report among ``reports`` whose topic id is the current one in
    ``topic_ids`` (an id unknown on either side matches). A broker may report two copies of one
    partition under different topic ids (it found both at start-up and cannot tell which
    generation of the topic is current); a report of a deleted generation is left out, and so
    is any partition ``topic_ids`` does not name."""
    out: dict[TopicPartition, ReplicaReport] = {}
    for report in reports:
        if report.tp not in topic_ids:
            continue
        current = topic_ids[report.tp]
        if report.topic_id is None or current is None or report.topic_id == current:
            out.setdefault(report.tp, report)
    return out


@dataclass(frozen=True)
class BrokerRegistrationRequest(Message):
    broker_id: int
    incarnation_id: Uuid  # new for every process start
    log_dirs: tuple[str, ...]
    # One report per replica the broker loaded; None: the sender reports nothing, and every
    # replica of it is taken as shut down cleanly (a test's hand-made registration).
    replica_reports: tuple[ReplicaReport, ...] | None = None


@dataclass(frozen=True)
class BrokerRegistrationResponse(Message):
    error: Errors
    broker_epoch: int = NO_EPOCH
    controller_epoch: int = NO_EPOCH


@dataclass(frozen=True)
class BrokerHeartbeat(Message):
    broker_id: int
    broker_epoch: int
    # KRaft's BrokerHeartbeat OfflineLogDirs: the log dirs this broker has taken offline.
    offline_log_dirs: tuple[str, ...] = ()
    # logwright's own (KIP-966's recovery asks with an RPC instead): where the logs of its
    # replicas of partitions without a leader end, for a recovery election.
    leaderless_replicas: tuple[ReplicaReport, ...] = ()


@dataclass(frozen=True)
class AlterPartitionRequest(Message):
    """A leader asks the controller to change a partition's ISR (shrink or expand)."""

    broker_id: int
    broker_epoch: int
    tp: TopicPartition
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    #: KIP-903's NewIsrWithEpochs: per member of ``new_isr``, the broker epoch the leader knows
    #: it by (its latest fetch's; -1: unknown, not checked). Empty: none given.
    new_isr_broker_epochs: tuple[int, ...] = ()


@dataclass(frozen=True)
class RecordLineageRequest(Message):
    """A leader tells the controller its leader epoch cache as it took up ``leader_epoch``:
    each epoch with the offset it begins at, the last ``leader_epoch`` itself. The controller
    keeps it as the partition's lineage; the leader's high watermark does not advance in the
    epoch before the answer (logwright's own: docs/cluster.md, "Recovery elections and the
    lineage"; the LeaderElection model's ``RecordLineage``)."""

    broker_id: int
    broker_epoch: int
    tp: TopicPartition
    topic_id: Uuid | None
    leader_epoch: int
    lineage: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class RecordLineageResponse(Message):
    """The controller recorded the lineage of ``leader_epoch`` (error NONE), or says why not."""

    tp: TopicPartition
    error: Errors
    leader_epoch: int = NO_EPOCH


@dataclass(frozen=True)
class AlterPartitionResponse(Message):
    tp: TopicPartition
    error: Errors
    leader_epoch: int = NO_EPOCH
    partition_epoch: int = NO_EPOCH
    isr: tuple[int, ...] = ()


# ---- replication and clients -----------------------------------------------------------------


@fast_init
@dataclass(frozen=True)
class FetchPartition:
    tp: TopicPartition
    current_leader_epoch: int
    fetch_offset: int
    log_start_offset: int  # the follower's own (Fetch v5+); -1 from consumers
    partition_max_bytes: int
    last_fetched_epoch: int = NO_EPOCH
    # Fetch v13+ (KIP-516): the topic id the fetcher means (Uuid.ZERO: not given, an older
    # version); a leader whose log has another id answers INCONSISTENT_TOPIC_ID.
    topic_id: Uuid = Uuid.ZERO


@fast_init
@dataclass(frozen=True)
class FetchRequest(Message):
    replica_id: int  # CONSUMER_REPLICA_ID for consumers
    replica_epoch: int  # the follower's broker epoch
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    partitions: tuple[FetchPartition, ...]
    principal: str = "User:ANONYMOUS"  # the session principal the authorizer checks


@fast_init
@dataclass(frozen=True)
class FetchPartitionData:
    tp: TopicPartition
    error: Errors
    high_watermark: int = -1
    log_start_offset: int = -1  # the leader's (Fetch v5+)
    records: bytes = b""
    # Set when the follower's last fetched epoch diverges: truncate to (epoch, end_offset).
    diverging_epoch: int = NO_EPOCH
    diverging_end_offset: int = -1
    # To a follower: the leader's epoch and the offset it began at (a logwright extension). A
    # follower whose log reaches it records that epoch there, as the leader did, so a later
    # recovery election ranks its copy by the epoch it followed, not by its records' epochs.
    leader_epoch: int = NO_EPOCH
    epoch_start_offset: int = -1


@fast_init
@dataclass(frozen=True)
class FetchResponse(Message):
    error: Errors
    partitions: tuple[FetchPartitionData, ...] = ()


@dataclass(frozen=True)
class OffsetForLeaderEpochPartition:
    tp: TopicPartition
    current_leader_epoch: int
    leader_epoch: int


@dataclass(frozen=True)
class OffsetForLeaderEpochRequest(Message):
    replica_id: int
    partitions: tuple[OffsetForLeaderEpochPartition, ...]
    principal: str = "User:ANONYMOUS"  # the session principal the authorizer checks


@dataclass(frozen=True)
class OffsetForLeaderEpochResult:
    tp: TopicPartition
    error: Errors
    leader_epoch: int = NO_EPOCH
    end_offset: int = -1


@dataclass(frozen=True)
class OffsetForLeaderEpochResponse(Message):
    results: tuple[OffsetForLeaderEpochResult, ...]


@fast_init
@dataclass(frozen=True)
class ProduceRequest(Message):
    acks: int  # 0, 1 or -1 (all)
    timeout_ms: int
    partitions: tuple[tuple[TopicPartition, bytes], ...]
    principal: str = "User:ANONYMOUS"
    # Produce v13+ (KIP-516): the id each topic is meant under, (topic, id); a topic not named
    # here is not checked. A leader whose log has another id answers INCONSISTENT_TOPIC_ID.
    topic_ids: tuple[tuple[str, Uuid], ...] = ()


@fast_init
@dataclass(frozen=True)
class ProducePartitionResult:
    tp: TopicPartition
    error: Errors
    base_offset: int = -1
    log_start_offset: int = -1
    error_message: str = ""


@fast_init
@dataclass(frozen=True)
class ProduceResponse(Message):
    partitions: tuple[ProducePartitionResult, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class ListOffsetsRequest(Message):
    replica_id: int
    partitions: tuple[tuple[TopicPartition, int], ...]  # (tp, timestamp)
    principal: str = "User:ANONYMOUS"
    # logwright's extension, as DeleteRecords has it (Kafka's ListOffsets names topics only):
    # the id each topic is meant under, (topic, id); a topic not named here is not checked. A
    # broker whose partition has another id answers INCONSISTENT_TOPIC_ID, so a consumer never
    # takes a deleted generation's start offset for the new one's.
    topic_ids: tuple[tuple[str, Uuid], ...] = ()


@dataclass(frozen=True)
class ListOffsetsResponse(Message):
    partitions: tuple[tuple[TopicPartition, Errors, int], ...]  # (tp, error, offset)


# ---- metadata (client -> any broker) -------------------------------------------------------


@dataclass(frozen=True)
class MetadataRequest(Message):
    """Kafka's Metadata request: what the broker knows of ``topics`` (None: every topic)."""

    topics: tuple[str, ...] | None
    principal: str = "User:ANONYMOUS"


@dataclass(frozen=True)
class MetadataBroker:
    """A live broker, as Metadata lists it (Kafka's host and port are the node id here)."""

    node_id: int
    node: NodeId


@dataclass(frozen=True)
class MetadataPartition:
    """One partition: its leader (-1 for none), leader epoch, replicas and ISR."""

    partition: int
    error: Errors
    leader: int = -1
    leader_epoch: int = NO_EPOCH
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()


@dataclass(frozen=True)
class MetadataTopic:
    """One topic: an error (UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED...) or its
    partitions."""

    name: str
    error: Errors
    topic_id: Uuid = Uuid.ZERO
    partitions: tuple[MetadataPartition, ...] = ()


@dataclass(frozen=True)
class MetadataResponse(Message):
    """The answering broker's metadata cache (what the last UpdateMetadata it accepted said)."""

    brokers: tuple[MetadataBroker, ...]
    controller_id: int
    topics: tuple[MetadataTopic, ...]


# ---- log dirs (admin client -> a broker) -----------------------------------------------------


@dataclass(frozen=True)
class DescribeLogDirsRequest(Message):
    """Kafka's DescribeLogDirs (key 35): the broker's log dirs and what they hold. ``topics``:
    (topic, partitions) pairs to describe, None for every partition. Needs DESCRIBE on the
    cluster."""

    topics: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    principal: str = "User:ANONYMOUS"


@dataclass(frozen=True)
class DescribeLogDirsPartition:
    """One replica in a dir: Kafka's PartitionIndex, PartitionSize (bytes), OffsetLag (0 for a
    current replica, as Kafka answers; -1 when the broker does not host the partition as a
    replica, only its log) and IsFutureKey."""

    partition_index: int
    partition_size: int
    offset_lag: int
    is_future: bool = False


@dataclass(frozen=True)
class DescribeLogDirsTopic:
    """The partitions of one topic in a dir."""

    name: str
    partitions: tuple[DescribeLogDirsPartition, ...]


@dataclass(frozen=True)
class DescribeLogDirsStray:
    """A logwright extension (not in Kafka's response): a stray partition in the dir (KIP-550,
    KIP-370), its topic id (Uuid.ZERO: unknown), when it was set aside or found (ms), its
    segment bytes, orphan removal's last decision with its reason ("" before the first), and
    when its next check is due (-1: never)."""

    name: str
    topic: str
    partition: int
    topic_id: Uuid
    since_ms: int
    size_bytes: int
    last_decision: str
    next_check_ms: int


@dataclass(frozen=True)
class DescribeLogDirsResult:
    """One log dir: Kafka's ErrorCode (NONE, or KAFKA_STORAGE_ERROR for an offline dir, which
    then lists nothing), LogDir, Topics, TotalBytes and UsableBytes (-1: unknown), and the
    logwright extension ``strays``."""

    log_dir: str
    error: Errors
    topics: tuple[DescribeLogDirsTopic, ...] = ()
    total_bytes: int = -1
    usable_bytes: int = -1
    strays: tuple[DescribeLogDirsStray, ...] = ()


@dataclass(frozen=True)
class DescribeLogDirsResponse(Message):
    """The broker's answer: a top-level error (CLUSTER_AUTHORIZATION_FAILED, then no results)
    and one result per log dir."""

    error: Errors
    results: tuple[DescribeLogDirsResult, ...] = ()

    def replica_dirs(self) -> tuple[dict[TopicPartition, str], dict[TopicPartition, str]]:
        """Where each listed partition's log is and, for a partition being moved between dirs
        (KIP-113), where its future log is: (current, future), each partition -> its dir. An
        offline dir lists nothing."""
        current: dict[TopicPartition, str] = {}
        future: dict[TopicPartition, str] = {}
        for result in self.results:
            if result.error != Errors.NONE:
                continue
            for topic in result.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    (future if p.is_future else current)[tp] = result.log_dir
        return current, future


@dataclass(frozen=True)
class AlterReplicaLogDirsTopic:
    """The partitions of one topic whose replica on the receiving broker should live in a dir."""

    name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class AlterReplicaLogDirsDir:
    """One destination dir (its absolute path, as the broker names it) and the replicas to move
    there."""

    path: str
    topics: tuple[AlterReplicaLogDirsTopic, ...]


@dataclass(frozen=True)
class AlterReplicaLogDirsRequest(Message):
    """Kafka's AlterReplicaLogDirs (key 34, KIP-113), sent to the broker holding the replicas:
    move each named replica to its dir (a future log filled by the dir-move fetcher, then the
    swap). Needs ALTER on the cluster."""

    dirs: tuple[AlterReplicaLogDirsDir, ...]
    principal: str = "User:ANONYMOUS"


@dataclass(frozen=True)
class AlterReplicaLogDirsPartitionResult:
    """One replica's answer: NONE (the move started, restarted towards a new dir, or the replica
    is already there), LOG_DIR_NOT_FOUND, KAFKA_STORAGE_ERROR (the destination or the replica's
    dir offline), REPLICA_NOT_AVAILABLE (no such replica here yet: the dir is remembered and
    used when it is created) or CLUSTER_AUTHORIZATION_FAILED."""

    partition_index: int
    error: Errors = Errors.NONE


@dataclass(frozen=True)
class AlterReplicaLogDirsTopicResult:
    """The answers for one topic's partitions."""

    name: str
    partitions: tuple[AlterReplicaLogDirsPartitionResult, ...]


@dataclass(frozen=True)
class AlterReplicaLogDirsResponse(Message):
    """Kafka's AlterReplicaLogDirs response: one result per replica asked, grouped by topic."""

    results: tuple[AlterReplicaLogDirsTopicResult, ...] = ()


# ---- DeleteRecords (KIP-107; Kafka's API key 21) ---------------------------------------------

DELETE_TO_HIGH_WATERMARK = -1  # DeleteRecords offset -1: "up to the high watermark"


@dataclass(frozen=True)
class DeleteRecordsPartition:
    """One partition of a DeleteRecords request: delete every record below ``offset`` (-1: the
    high watermark)."""

    partition_index: int
    offset: int


@dataclass(frozen=True)
class DeleteRecordsTopic:
    """The partitions of one topic in a DeleteRecords request."""

    name: str
    partitions: tuple[DeleteRecordsPartition, ...]


@dataclass(frozen=True)
class DeleteRecordsRequest(Message):
    """Kafka's DeleteRecords request, sent to the leader of every partition it names; the
    leader answers when each partition's low watermark reached its offset, or after
    ``timeout_ms`` (REQUEST_TIMED_OUT for those that did not)."""

    topics: tuple[DeleteRecordsTopic, ...]
    timeout_ms: int
    principal: str = "User:ANONYMOUS"
    # logwright's extension, as Produce v13 and Fetch v13 have it (KIP-516; Kafka's
    # DeleteRecords names topics only): the id each topic is meant under, (topic, id); a topic
    # not named here is not checked. A leader whose log has another id answers
    # INCONSISTENT_TOPIC_ID, so a deleted generation still held somewhere is never the one
    # whose records go.
    topic_ids: tuple[tuple[str, Uuid], ...] = ()


@dataclass(frozen=True)
class DeleteRecordsPartitionResult:
    """One partition's answer: its low watermark (the smallest log start offset over the
    replicas counted; -1 with an error) and its error."""

    partition_index: int
    low_watermark: int
    error: Errors = Errors.NONE


@dataclass(frozen=True)
class DeleteRecordsTopicResult:
    """The answers for one topic's partitions."""

    name: str
    partitions: tuple[DeleteRecordsPartitionResult, ...]


@dataclass(frozen=True)
class DeleteRecordsResponse(Message):
    """Kafka's DeleteRecords response: one result per partition asked, grouped by topic."""

    topics: tuple[DeleteRecordsTopicResult, ...] = ()
