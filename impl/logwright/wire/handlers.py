"""Each served API: a wire request (a kio dataclass at the client's version) in, the broker's
decision through the cluster network, the wire response out.

Invariant upheld: a handler decides nothing a broker decides. Produce, Fetch, ListOffsets,
Metadata, DeleteRecords and DescribeLogDirs go to the broker whose port the request came in on,
as the same internal request the in-process client sends, so the wire and the embedded API
are one code path below this translation; topic creation and deletion go to the controller
through the calls ``Cluster`` itself makes. Every request is answered exactly once, with
REQUEST_TIMED_OUT if its broker does not answer in time.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from logwright.errors import Errors, KafkaError
from logwright.identity import Uuid
from logwright.protocol.messages import (
    CONSUMER_REPLICA_ID,
    NO_EPOCH,
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopic,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    Message,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from logwright.storage.naming import TopicPartition
from logwright.wire.codec import (
    SUPPORTED,
    build,
    error_code,
    has_field,
    nested,
    response_class,
)

if TYPE_CHECKING:
    from logwright.wire.exchange import Exchange

__all__ = ["DATA_HANDLERS", "unsupported_api_versions"]

FETCH_SESSION_ID_NOT_FOUND = 70
UNSUPPORTED_VERSION = 35
NO_DELAY = datetime.timedelta(0)
# How long past a request's own timeout the wire waits for its broker before answering
# REQUEST_TIMED_OUT itself (the broker answers first whenever it is alive).
_GRACE_MS = 5_000
ADMIN_TIMEOUT_MS = 30_000


def millis(value: Any) -> int:
    """A kio timedelta (or int) as milliseconds."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def wire_uuid(value: Uuid | None) -> uuid.UUID:
    return uuid.UUID(bytes=value.value) if value is not None else uuid.UUID(int=0)


def response_of(ex: Exchange) -> Any:
    return response_class(ex.request.api_key, ex.request.api_version)


def kafka_error(exc: BaseException) -> tuple[int, str]:
    """The error code and message a client sees for an exception of a cluster call."""
    if isinstance(exc, KafkaError):
        return exc.code, exc.message or str(exc)
    return int(Errors.INVALID_REQUEST), str(exc)


def topic_names(ex: Exchange) -> dict[uuid.UUID, str]:
    return {wire_uuid(t.topic_id): t.name for t in ex.cluster.store.topics()}


# ---- ApiVersions ---------------------------------------------------------------------------


def _api_keys(cls: Any) -> tuple[Any, ...]:
    entry = nested(cls, "ApiVersion")
    return tuple(build(entry, api_key=key, min_version=lo, max_version=hi)
                 for key, (lo, hi) in sorted(SUPPORTED.items()))


def unsupported_api_versions() -> Any:
    """The v0 ApiVersions answer to a request at a version this broker does not serve."""
    cls = response_class(18, 0)
    return build(cls, error_code=error_code(UNSUPPORTED_VERSION), api_keys=_api_keys(cls))


def _api_versions(ex: Exchange) -> None:
    cls = response_of(ex)
    ex.respond(build(cls, error_code=error_code(0), api_keys=_api_keys(cls),
                     throttle_time=NO_DELAY))


# ---- Metadata and DescribeCluster ----------------------------------------------------------


def _brokers(ex: Exchange, cls: Any, entry_name: str, id_field: str,
             live: Iterable[int]) -> tuple[Any, ...]:
    entry = nested(cls, entry_name)
    out = []
    for b in sorted(live):
        address = ex.address_of(b)
        if address is not None:
            out.append(build(entry, **{id_field: b}, host=address[0], port=address[1],
                             rack=None))
    return tuple(out)


def _metadata(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    names: tuple[str, ...] | None = None
    if body.topics is not None:
        by_id = topic_names(ex) if any(t.name is None for t in body.topics) else {}
        names = tuple(t.name if t.name is not None else by_id.get(t.topic_id, "")
                      for t in body.topics)

    def answer(reply: Message | None) -> None:
        if not isinstance(reply, MetadataResponse):
            # The broker did not answer: an empty cluster view makes the client retry.
            ex.respond(build(cls, throttle_time=NO_DELAY, brokers=(),
                             cluster_id=ex.cluster.cluster_id, controller_id=-1, topics=()))
            return
        topic_cls = nested(cls, "MetadataResponseTopic")
        part_cls = nested(cls, "MetadataResponsePartition")
        topics = tuple(build(
            topic_cls, error_code=error_code(t.error), name=t.name,
            topic_id=wire_uuid(t.topic_id), is_internal=False,
            topic_authorized_operations=-2147483648,
            partitions=tuple(build(
                part_cls, error_code=error_code(p.error), partition_index=p.partition,
                leader_id=p.leader, leader_epoch=p.leader_epoch, replica_nodes=p.replicas,
                isr_nodes=p.isr, offline_replicas=())
                for p in t.partitions))
            for t in reply.topics)
        ex.respond(build(cls, throttle_time=NO_DELAY,
                         brokers=_brokers(ex, cls, "MetadataResponseBroker", "node_id",
                                          (b.node_id for b in reply.brokers)),
                         cluster_id=ex.cluster.cluster_id, controller_id=reply.controller_id,
                         topics=topics, cluster_authorized_operations=-2147483648))

    ex.call(lambda cid: MetadataRequest(cid, names, principal=ex.principal), answer,
            ADMIN_TIMEOUT_MS)


def _describe_cluster(ex: Exchange) -> None:
    cls = response_of(ex)
    live = [b for b, broker in ex.cluster.brokers.items() if broker.alive]
    record = ex.cluster.store.controller()
    ex.respond(build(cls, throttle_time=NO_DELAY, error_code=error_code(0),
                     error_message=None, endpoint_type=1, cluster_id=ex.cluster.cluster_id,
                     controller_id=-1 if record is None else ex.broker_id,
                     brokers=_brokers(ex, cls, "DescribeClusterBroker", "broker_id", live),
                     cluster_authorized_operations=-2147483648))


# ---- Produce -------------------------------------------------------------------------------


def _produce(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    acks = int(body.acks)
    timeout_ms = millis(body.timeout)
    partitions = tuple((TopicPartition(t.name, p.index), bytes(p.records or b""))
                       for t in body.topic_data for p in t.partition_data)

    def message(cid: int) -> ProduceRequest:
        return ProduceRequest(cid, acks, timeout_ms, partitions, principal=ex.principal)

    if acks == 0:
        ex.send(message)
        ex.respond(None)  # Kafka sends no answer to acks=0
        return

    def answer(reply: Message | None) -> None:
        results = {r.tp: r for r in reply.partitions} if isinstance(reply,
                                                                    ProduceResponse) else {}
        part_cls = nested(cls, "PartitionProduceResponse")
        topic_cls = nested(cls, "TopicProduceResponse")
        leader_cls = nested(cls, "LeaderIdAndEpoch") if has_field(part_cls,
                                                                  "current_leader") else None
        by_topic: dict[str, list[Any]] = {}
        for tp, _ in partitions:
            r = results.get(tp)
            code = int(Errors.REQUEST_TIMED_OUT) if r is None else int(r.error)
            fields: dict[str, Any] = dict(
                index=tp.partition, error_code=error_code(code),
                base_offset=-1 if r is None else r.base_offset, log_append_time=None,
                log_start_offset=-1 if r is None else r.log_start_offset, record_errors=(),
                error_message=(r.error_message or None) if r is not None else None)
            if leader_cls is not None:
                fields["current_leader"] = build(leader_cls, leader_id=-1, leader_epoch=-1)
            by_topic.setdefault(tp.topic, []).append(build(part_cls, **fields))
        ex.respond(build(cls, throttle_time=NO_DELAY, node_endpoints=(), responses=tuple(
            build(topic_cls, name=name, partition_responses=tuple(parts))
            for name, parts in by_topic.items())))

    ex.call(message, answer, timeout_ms + _GRACE_MS)


# ---- Fetch ---------------------------------------------------------------------------------


def _fetch(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    session_id = int(getattr(body, "session_id", 0))
    if session_id != 0:
        # logwright keeps no fetch sessions (KIP-227) and never hands out an id, so a
        # client naming one is told it is gone, and falls back to full fetches.
        ex.respond(build(cls, throttle_time=NO_DELAY,
                         error_code=error_code(FETCH_SESSION_ID_NOT_FOUND), session_id=0,
                         responses=()))
        return
    asked = [(TopicPartition(t.topic, p.partition), p) for t in body.topics
             for p in t.partitions]
    max_wait_ms = max(0, millis(body.max_wait))
    partitions = tuple(FetchPartition(
        tp, int(getattr(p, "current_leader_epoch", NO_EPOCH)), int(p.fetch_offset), -1,
        max(0, int(p.partition_max_bytes)), int(getattr(p, "last_fetched_epoch", NO_EPOCH)))
        for tp, p in asked)
    max_bytes = int(getattr(body, "max_bytes", 0x7FFFFFFF))

    def answer(reply: Message | None) -> None:
        data = {d.tp: d for d in reply.partitions} if isinstance(reply, FetchResponse) else {}
        part_cls = nested(cls, "PartitionData")
        topic_cls = nested(cls, "FetchableTopicResponse")
        extras: dict[str, Any] = {}
        if has_field(part_cls, "diverging_epoch"):
            extras["diverging_epoch"] = build(nested(cls, "EpochEndOffset"), epoch=-1,
                                              end_offset=-1)
            extras["current_leader"] = build(nested(cls, "LeaderIdAndEpoch"), leader_id=-1,
                                             leader_epoch=-1)
            extras["snapshot_id"] = build(nested(cls, "SnapshotId"), end_offset=-1, epoch=-1)
        by_topic: dict[str, list[Any]] = {}
        for tp, _ in asked:
            d = data.get(tp)
            code = int(Errors.REQUEST_TIMED_OUT) if d is None else int(d.error)
            hw = -1 if d is None else d.high_watermark
            fields = dict(extras, partition_index=tp.partition, error_code=error_code(code),
                          high_watermark=hw, last_stable_offset=hw,
                          log_start_offset=-1 if d is None else d.log_start_offset,
                          aborted_transactions=None, preferred_read_replica=-1,
                          records=d.records if d is not None else b"")
            by_topic.setdefault(tp.topic, []).append(build(part_cls, **fields))
        ex.respond(build(cls, throttle_time=NO_DELAY, error_code=error_code(0),
                         session_id=0, responses=tuple(
                             build(topic_cls, topic=name, partitions=tuple(parts))
                             for name, parts in by_topic.items())))

    ex.call(lambda cid: FetchRequest(cid, CONSUMER_REPLICA_ID, -1, max_wait_ms,
                                     int(body.min_bytes), max_bytes, partitions,
                                     principal=ex.principal),
            answer, max_wait_ms + _GRACE_MS)


# ---- ListOffsets ---------------------------------------------------------------------------


def _list_offsets(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    asked = tuple((TopicPartition(t.name, p.partition_index), int(p.timestamp))
                  for t in body.topics for p in t.partitions)

    def answer(reply: Message | None) -> None:
        found = ({tp: (err, off) for tp, err, off in reply.partitions}
                 if isinstance(reply, ListOffsetsResponse) else {})
        part_cls = nested(cls, "ListOffsetsPartitionResponse")
        topic_cls = nested(cls, "ListOffsetsTopicResponse")
        by_topic: dict[str, list[Any]] = {}
        for tp, _ in asked:
            err, offset = found.get(tp, (Errors.REQUEST_TIMED_OUT, -1))
            by_topic.setdefault(tp.topic, []).append(build(
                part_cls, partition_index=tp.partition, error_code=error_code(err),
                timestamp=-1, offset=offset, leader_epoch=-1))
        ex.respond(build(cls, throttle_time=NO_DELAY, topics=tuple(
            build(topic_cls, name=name, partitions=tuple(parts))
            for name, parts in by_topic.items())))

    ex.call(lambda cid: ListOffsetsRequest(cid, CONSUMER_REPLICA_ID, asked,
                                           principal=ex.principal),
            answer, ADMIN_TIMEOUT_MS)


# ---- DeleteRecords -------------------------------------------------------------------------


def _delete_records(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    timeout_ms = millis(body.timeout)
    topics = tuple(DeleteRecordsTopic(t.name, tuple(
        DeleteRecordsPartition(int(p.partition_index), int(p.offset)) for p in t.partitions))
        for t in body.topics)

    def answer(reply: Message | None) -> None:
        got = ({(t.name, p.partition_index): p for t in reply.topics for p in t.partitions}
               if isinstance(reply, DeleteRecordsResponse) else {})
        part_cls = nested(cls, "DeleteRecordsPartitionResult")
        topic_cls = nested(cls, "DeleteRecordsTopicResult")
        ex.respond(build(cls, throttle_time=NO_DELAY, topics=tuple(
            build(topic_cls, name=t.name, partitions=tuple(
                build(part_cls, partition_index=p.partition_index,
                      low_watermark=r.low_watermark if r is not None else -1,
                      error_code=error_code(r.error if r is not None
                                            else Errors.REQUEST_TIMED_OUT))
                for p in t.partitions for r in [got.get((t.name, p.partition_index))]))
            for t in topics)))

    ex.call(lambda cid: DeleteRecordsRequest(cid, topics, timeout_ms, principal=ex.principal),
            answer, timeout_ms + _GRACE_MS)


# ---- DescribeLogDirs -----------------------------------------------------------------------


def _describe_log_dirs(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    topics = (None if body.topics is None else
              tuple((t.topic, tuple(int(p) for p in t.partitions)) for t in body.topics))

    def answer(reply: Message | None) -> None:
        if not isinstance(reply, DescribeLogDirsResponse):
            ex.respond(build(cls, throttle_time=NO_DELAY,
                             error_code=error_code(Errors.REQUEST_TIMED_OUT), results=()))
            return
        result_cls = nested(cls, "DescribeLogDirsResult")
        topic_cls = nested(cls, "DescribeLogDirsTopic")
        part_cls = nested(cls, "DescribeLogDirsPartition")
        ex.respond(build(cls, throttle_time=NO_DELAY, error_code=error_code(reply.error),
                         results=tuple(build(
                             result_cls, error_code=error_code(r.error), log_dir=r.log_dir,
                             total_bytes=r.total_bytes, usable_bytes=r.usable_bytes,
                             topics=tuple(build(topic_cls, name=t.name, partitions=tuple(
                                 build(part_cls, partition_index=p.partition_index,
                                       partition_size=p.partition_size,
                                       offset_lag=p.offset_lag, is_future_key=p.is_future)
                                 for p in t.partitions)) for t in r.topics))
                             for r in reply.results)))

    ex.call(lambda cid: DescribeLogDirsRequest(cid, topics, principal=ex.principal), answer,
            ADMIN_TIMEOUT_MS)


DATA_HANDLERS: dict[int, Callable[[Exchange], None]] = {
    0: _produce,
    1: _fetch,
    2: _list_offsets,
    3: _metadata,
    18: _api_versions,
    21: _delete_records,
    35: _describe_log_dirs,
    60: _describe_cluster,
}
