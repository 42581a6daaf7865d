"""The admin APIs on the wire: topics, configs, reassignments and log dir moves.

Invariant upheld: each goes where ``Cluster``'s own call of the same name goes (the controller
for topics, configs and reassignments; the broker the request came to for AlterReplicaLogDirs)
with the same validation, and never blocks the server's loop: a call that completes later
(a topic's leaders, configs reaching the brokers) is answered from ``wait_for``.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from logwright.broker.authorizer import Operation
from logwright.cluster import validate
from logwright.configs import TOPIC_CONFIGS, ConfigEntry, parse_topic_configs
from logwright.errors import Errors, InvalidConfig, KafkaError, LogwrightError
from logwright.protocol.messages import (
    AlterReplicaLogDirsDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirsTopic,
    Message,
)
from logwright.storage.naming import TopicPartition
from logwright.wire.codec import build, error_code, nested
from logwright.wire.handlers import (
    ADMIN_TIMEOUT_MS,
    NO_DELAY,
    kafka_error,
    millis,
    response_of,
    topic_names,
    wire_uuid,
)

if TYPE_CHECKING:
    from logwright.wire.exchange import Exchange

__all__ = ["ADMIN_HANDLERS"]

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
NO_REASSIGNMENT_IN_PROGRESS = 85
# Kafka's ConfigSource codes (DescribeConfigs v1+).
_SOURCES = {"DYNAMIC_TOPIC_CONFIG": 1, "STATIC_BROKER_CONFIG": 4, "DEFAULT_CONFIG": 5}
_OP_SET, _OP_DELETE = 0, 1


# ---- CreateTopics and DeleteTopics ---------------------------------------------------------


def _create_topics(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    cluster = ex.cluster
    timeout_ms = max(0, millis(body.timeout))
    result_cls = nested(cls, "CreatableTopicResult")
    results: dict[str, dict[str, Any]] = {}
    created: list[TopicPartition] = []
    counts: dict[str, int] = {}
    for t in body.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    for t in body.topics:
        fields: dict[str, Any] = dict(name=t.name, topic_id=uuid.UUID(int=0),
                                      error_code=error_code(0), error_message=None,
                                      topic_config_error_code=0, num_partitions=-1,
                                      replication_factor=-1, configs=None)
        results[t.name] = fields
        if counts[t.name] > 1:
            fields.update(error_code=error_code(Errors.INVALID_REQUEST),
                          error_message=f"topic {t.name} is named more than once")
            continue
        if not (ex.allowed_cluster(Operation.CREATE)
                or ex.allowed_topic(Operation.CREATE, t.name)):
            fields.update(error_code=error_code(Errors.TOPIC_AUTHORIZATION_FAILED),
                          error_message=f"CREATE on topic {t.name} is needed")
            continue
        if t.assignments:
            fields.update(error_code=error_code(Errors.INVALID_REQUEST),
                          error_message="explicit replica assignments are not supported; "
                                        "create the topic, then reassign its partitions")
            continue
        partitions = 1 if t.num_partitions == -1 else int(t.num_partitions)
        rf = min(3, len(cluster.brokers)) if t.replication_factor == -1 else int(
            t.replication_factor)
        configs = {c.name: c.value for c in t.configs}
        try:
            validate.create_topic(cluster, t.name, partitions, rf, configs)
            parse_topic_configs(configs)
            if not body.validate_only:
                topic_id = cluster.controller.create_topic(t.name, partitions, rf, configs)
                fields["topic_id"] = wire_uuid(topic_id)
                created.extend(TopicPartition(t.name, p) for p in range(partitions))
        except (LogwrightError, ValueError, TypeError) as exc:
            code, text = kafka_error(exc)
            fields.update(error_code=error_code(code), error_message=text)
            continue
        fields.update(num_partitions=partitions, replication_factor=rf)

    def respond(_ready: bool) -> None:
        # As Kafka does, the answer comes once the topics have leaders, or at the timeout
        # (the creation is not undone then: a later Metadata shows the topic).
        ex.respond(build(cls, throttle_time=NO_DELAY, topics=tuple(
            build(result_cls, **fields) for fields in results.values())))

    ex.wait_for(lambda: cluster.leaders_ready(created), timeout_ms, respond)


def _create_partitions(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    cluster = ex.cluster
    result_cls = nested(cls, "CreatePartitionsTopicResult")
    results = []
    added: list[TopicPartition] = []
    for t in body.topics:
        code, text = 0, None
        try:
            if not ex.allowed_topic(Operation.ALTER, t.name):
                raise KafkaError.of(Errors.TOPIC_AUTHORIZATION_FAILED,
                                    f"ALTER on topic {t.name} is needed")
            validate.create_partitions(cluster, t.name, int(t.count))
            record = cluster.store.topic(t.name)
            if record is None:
                raise KafkaError.of(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {t.name}")
            assignment = (None if t.assignments is None else
                          [[int(b) for b in a.broker_ids] for a in t.assignments])
            if body.validate_only:
                if int(t.count) <= record.partition_count:
                    raise KafkaError.of(Errors.INVALID_PARTITIONS,
                                        f"topic {t.name} has {record.partition_count} "
                                        f"partitions; the new count must be larger")
            else:
                new = cluster.controller.create_partitions(t.name, int(t.count), assignment)
                added.extend(TopicPartition(t.name, p) for p in new)
        except (LogwrightError, ValueError, TypeError) as exc:
            code, text = kafka_error(exc)
        results.append(build(result_cls, name=t.name, error_code=error_code(code),
                             error_message=text))

    def respond(_ready: bool) -> None:
        ex.respond(build(cls, throttle_time=NO_DELAY, results=tuple(results)))

    ex.wait_for(lambda: cluster.leaders_ready(added), max(0, millis(body.timeout)),
                       respond)


def _delete_topics(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    cluster = ex.cluster
    result_cls = nested(cls, "DeletableTopicResult")
    if hasattr(body, "topic_names"):
        asked: list[tuple[str | None, uuid.UUID | None]] = [(n, None) for n in body.topic_names]
    else:
        asked = [(t.name, t.topic_id) for t in body.topics]
    by_id = topic_names(ex)
    out = []
    for name, topic_id in asked:
        if name is None and topic_id is not None:
            name = by_id.get(topic_id)
        fields: dict[str, Any] = dict(name=name, topic_id=topic_id or uuid.UUID(int=0),
                                      error_code=error_code(0), error_message=None)
        try:
            if name is None:
                raise KafkaError.of(Errors.UNKNOWN_TOPIC_ID, f"no topic has id {topic_id}")
            if not ex.allowed_topic(Operation.DELETE, name):
                raise KafkaError.of(Errors.TOPIC_AUTHORIZATION_FAILED,
                                    f"DELETE on topic {name} is needed")
            if cluster.store.topic(name) is None:
                raise KafkaError.of(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name}")
            validate.delete_topic(cluster, name)
            cluster.controller.delete_topic(name)
        except (LogwrightError, ValueError, TypeError) as exc:
            code, text = kafka_error(exc)
            fields.update(error_code=error_code(code), error_message=text)
        out.append(build(result_cls, **fields))
    ex.respond(build(cls, throttle_time=NO_DELAY, responses=tuple(out)))


# ---- DescribeConfigs and IncrementalAlterConfigs -------------------------------------------


def _describe_configs(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    result_cls = nested(cls, "DescribeConfigsResult")
    entry_cls = nested(cls, "DescribeConfigsResourceResult")
    results = []
    for r in body.resources:
        fields: dict[str, Any] = dict(error_code=error_code(0), error_message=None,
                                      resource_type=r.resource_type,
                                      resource_name=r.resource_name, configs=())
        if r.resource_type != RESOURCE_TOPIC:
            fields.update(error_code=error_code(Errors.INVALID_REQUEST),
                          error_message="only TOPIC resources are described; a broker's "
                                        "properties are in its server.properties")
            results.append(build(result_cls, **fields))
            continue
        try:
            if not ex.allowed_topic(Operation.DESCRIBE, r.resource_name):
                raise KafkaError.of(Errors.TOPIC_AUTHORIZATION_FAILED,
                                    f"DESCRIBE on topic {r.resource_name} is needed")
            if ex.cluster.store.topic(r.resource_name) is None:
                raise KafkaError.of(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                    f"no topic {r.resource_name}")
            entries: dict[str, ConfigEntry] = ex.cluster.describe_topic_configs(
                r.resource_name)
        except (LogwrightError, ValueError, TypeError) as exc:
            code, text = kafka_error(exc)
            fields.update(error_code=error_code(code), error_message=text)
            results.append(build(result_cls, **fields))
            continue
        keys = r.configuration_keys
        fields["configs"] = tuple(build(
            entry_cls, name=e.name, value=e.value, read_only=False,
            is_default=e.is_default, config_source=_SOURCES.get(e.source, 5),
            is_sensitive=False, synonyms=(), config_type=0, documentation=None)
            for name, e in sorted(entries.items()) if keys is None or name in keys)
        results.append(build(result_cls, **fields))
    ex.respond(build(cls, throttle_time=NO_DELAY, results=tuple(results)))


def _incremental_alter_configs(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    result_cls = nested(cls, "AlterConfigsResourceResponse")
    answers: list[dict[str, Any]] = []
    waits = []
    for r in body.resources:
        fields: dict[str, Any] = dict(error_code=error_code(0), error_message=None,
                                      resource_type=r.resource_type,
                                      resource_name=r.resource_name)
        answers.append(fields)
        try:
            if r.resource_type != RESOURCE_TOPIC:
                raise KafkaError.of(Errors.INVALID_REQUEST,
                                    "only TOPIC configs can be altered; a broker's are in its "
                                    "server.properties")
            sets = {c.name: c.value for c in r.configs if c.config_operation == _OP_SET}
            deletes = [c.name for c in r.configs if c.config_operation == _OP_DELETE]
            other = [c.name for c in r.configs if c.config_operation not in (_OP_SET,
                                                                               _OP_DELETE)]
            if other:
                raise KafkaError.of(Errors.INVALID_REQUEST,
                                    f"APPEND and SUBTRACT are not supported ({', '.join(other)}); "
                                    f"SET the whole list instead")
            if not ex.allowed_topic(Operation.ALTER, r.resource_name):
                raise KafkaError.of(Errors.TOPIC_AUTHORIZATION_FAILED,
                                    f"ALTER on topic {r.resource_name} is needed")
            if ex.cluster.store.topic(r.resource_name) is None:
                raise KafkaError.of(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                    f"no topic {r.resource_name}")
            if body.validate_only:
                validate.alter_topic_configs(ex.cluster, r.resource_name, sets, deletes)
                parse_topic_configs(sets)
                for key in deletes:
                    if key not in TOPIC_CONFIGS:
                        raise InvalidConfig(key, None, "unknown topic config")
            else:
                waits.append(ex.cluster.begin_alter_topic_configs(r.resource_name, sets,
                                                                  deletes))
        except (LogwrightError, ValueError, TypeError) as exc:
            code, text = kafka_error(exc)
            fields.update(error_code=error_code(code), error_message=text)

    def respond(_applied: bool) -> None:
        ex.respond(build(cls, throttle_time=NO_DELAY, responses=tuple(
            build(result_cls, **fields) for fields in answers)))

    ex.wait_for(lambda: all(w() for w in waits), ADMIN_TIMEOUT_MS, respond)


# ---- reassignments -------------------------------------------------------------------------


def _alter_partition_reassignments(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    topic_cls = nested(cls, "ReassignableTopicResponse")
    part_cls = nested(cls, "ReassignablePartitionResponse")
    if not ex.allowed_cluster(Operation.ALTER):
        ex.respond(build(cls, throttle_time=NO_DELAY,
                         error_code=error_code(Errors.CLUSTER_AUTHORIZATION_FAILED),
                         error_message="ALTER on the cluster is needed", responses=()))
        return
    controller = ex.cluster.controller
    pending = {s.tp for s in controller.reassignment_status()}
    out = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            tp = TopicPartition(t.name, int(p.partition_index))
            code, text = 0, None
            try:
                if p.replicas is None:
                    if tp in pending:
                        raise KafkaError.of(Errors.INVALID_REQUEST,
                                            "cancelling a reassignment is not supported")
                    code, text = NO_REASSIGNMENT_IN_PROGRESS, f"no reassignment of {tp}"
                else:
                    controller.reassign(json.dumps({"version": 1, "partitions": [
                        {"topic": t.name, "partition": tp.partition,
                         "replicas": [int(r) for r in p.replicas]}]}))
            except (LogwrightError, ValueError, TypeError) as exc:
                code, text = kafka_error(exc)
            parts.append(build(part_cls, partition_index=tp.partition,
                               error_code=error_code(code), error_message=text))
        out.append(build(topic_cls, name=t.name, partitions=tuple(parts)))
    ex.respond(build(cls, throttle_time=NO_DELAY, error_code=error_code(0),
                     error_message=None, responses=tuple(out)))


def _list_partition_reassignments(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    topic_cls = nested(cls, "OngoingTopicReassignment")
    part_cls = nested(cls, "OngoingPartitionReassignment")
    if not ex.allowed_cluster(Operation.DESCRIBE):
        ex.respond(build(cls, throttle_time=NO_DELAY,
                         error_code=error_code(Errors.CLUSTER_AUTHORIZATION_FAILED),
                         error_message="DESCRIBE on the cluster is needed", topics=()))
        return
    wanted = (None if body.topics is None else
              {(t.name, int(p)) for t in body.topics for p in t.partition_indexes})
    by_topic: dict[str, list[Any]] = {}
    for s in ex.cluster.controller.reassignment_status():
        if s.state != "in progress" or (wanted is not None
                                        and (s.tp.topic, s.tp.partition) not in wanted):
            continue
        by_topic.setdefault(s.tp.topic, []).append(build(
            part_cls, partition_index=s.tp.partition, replicas=s.replicas,
            adding_replicas=s.adding_replicas, removing_replicas=s.removing_replicas))
    ex.respond(build(cls, throttle_time=NO_DELAY, error_code=error_code(0), error_message=None,
                     topics=tuple(build(topic_cls, name=name, partitions=tuple(parts))
                                  for name, parts in sorted(by_topic.items()))))


# ---- AlterReplicaLogDirs -------------------------------------------------------------------


def _alter_replica_log_dirs(ex: Exchange) -> None:
    body = ex.request.body
    cls = response_of(ex)
    dirs = tuple(AlterReplicaLogDirsDir(d.path, tuple(
        AlterReplicaLogDirsTopic(t.name, tuple(int(p) for p in t.partitions))
        for t in d.topics)) for d in body.dirs)
    asked = [(t.name, p) for d in dirs for t in d.topics for p in t.partitions]

    def answer(reply: Message | None) -> None:
        got = ({(t.name, p.partition_index): p.error for t in reply.results
                for p in t.partitions}
               if isinstance(reply, AlterReplicaLogDirsResponse) else {})
        topic_cls = nested(cls, "AlterReplicaLogDirTopicResult")
        part_cls = nested(cls, "AlterReplicaLogDirPartitionResult")
        by_topic: dict[str, list[Any]] = {}
        for name, p in asked:
            by_topic.setdefault(name, []).append(build(
                part_cls, partition_index=p,
                error_code=error_code(got.get((name, p), Errors.REQUEST_TIMED_OUT))))
        ex.respond(build(cls, throttle_time=NO_DELAY, results=tuple(
            build(topic_cls, topic_name=name, partitions=tuple(parts))
            for name, parts in by_topic.items())))

    ex.call(lambda cid: AlterReplicaLogDirsRequest(cid, dirs, principal=ex.principal), answer,
            ADMIN_TIMEOUT_MS)


ADMIN_HANDLERS = {
    19: _create_topics,
    20: _delete_topics,
    37: _create_partitions,
    32: _describe_configs,
    34: _alter_replica_log_dirs,
    44: _incremental_alter_configs,
    45: _alter_partition_reassignments,
    46: _list_partition_reassignments,
}
