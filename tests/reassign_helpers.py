"""Playing a broker's side of a reassignment for the controller harness: answering the
controller's LeaderAndIsr (a reassignment completes only once every target's broker answered
one), DescribeLogDirs and AlterReplicaLogDirs (its dir moves, KIP-113) by hand."""

from __future__ import annotations

from collections.abc import Mapping

from logwright.controller import ControllerConfig
from logwright.errors import Errors
from logwright.identity import TopicPartition
from logwright.protocol.messages import (
    AlterReplicaLogDirsPartitionResult,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirsTopicResult,
    DescribeLogDirsPartition,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    PartitionError,
)
from tests.test_controller import SETTLE_MS, Harness

POLL_MS = ControllerConfig().dir_move_poll_ms  # how often the controller asks where a move is
Where = tuple[str | None, str | None]  # (current dir, future dir) of a replica on a broker


def answer_leader_and_isr(h: Harness, *broker_ids: int,
                          errors: Mapping[TopicPartition, Errors] | None = None,
                          sent_by: str | None = None) -> int:
    """Answer every LeaderAndIsr a controller (``sent_by``, or any) sent each of ``broker_ids``
    (and forget them), each partition with NONE or its error in ``errors``; returns how many
    were answered."""
    answered = 0
    for broker_id in broker_ids:
        def wanted(src: str, m: object) -> bool:
            return isinstance(m, LeaderAndIsrRequest) and sent_by in (None, src)
        received = h.brokers[broker_id].received
        asked = [(src, m) for src, m in received if wanted(src, m)]
        h.brokers[broker_id].received = [(s, m) for s, m in received if not wanted(s, m)]
        for src, request in asked:
            assert isinstance(request, LeaderAndIsrRequest)
            h.net.send(f"broker-{broker_id}", src, LeaderAndIsrResponse(
                request.correlation_id, Errors.NONE, tuple(
                    PartitionError(w.tp, (errors or {}).get(w.tp, Errors.NONE))
                    for w in request.partition_states)))
        answered += len(asked)
    h.run(SETTLE_MS)
    return answered


def answer_describe(h: Harness, broker_id: int, where: Mapping[TopicPartition, Where],
                    dirs: tuple[str, ...] | None = None,
                    offline: tuple[str, ...] = ()) -> int:
    """Answer every DescribeLogDirs the controller sent ``broker_id`` (and forget them) as a
    broker whose replicas are ``where`` says; returns how many were answered."""
    dirs = dirs or (f"/data/{broker_id}/d1", f"/data/{broker_id}/d2")
    asked = [(src, m) for src, m in h.brokers[broker_id].received
             if isinstance(m, DescribeLogDirsRequest)]
    h.brokers[broker_id].received = [(s, m) for s, m in h.brokers[broker_id].received
                                     if not isinstance(m, DescribeLogDirsRequest)]
    for src, request in asked:
        results = []
        for d in dirs:
            if d in offline:
                results.append(DescribeLogDirsResult(d, Errors.KAFKA_STORAGE_ERROR))
                continue
            by_topic: dict[str, list[DescribeLogDirsPartition]] = {}
            for tp, (current, future) in sorted(where.items()):
                if current == d:
                    by_topic.setdefault(tp.topic, []).append(
                        DescribeLogDirsPartition(tp.partition, 100, 0))
                if future == d:
                    by_topic.setdefault(tp.topic, []).append(
                        DescribeLogDirsPartition(tp.partition, 10, 5, is_future=True))
            results.append(DescribeLogDirsResult(d, Errors.NONE, tuple(
                DescribeLogDirsTopic(t, tuple(ps)) for t, ps in sorted(by_topic.items()))))
        h.net.send(f"broker-{broker_id}", src,
                   DescribeLogDirsResponse(request.correlation_id, Errors.NONE, tuple(results)))
    h.run(SETTLE_MS)
    return len(asked)


def answer_alter(h: Harness, broker_id: int, error: Errors = Errors.NONE) -> list[tuple[str, str]]:
    """Answer every AlterReplicaLogDirs the controller sent ``broker_id`` (and forget them) with
    ``error``; returns the (partition, dir) pairs asked, as "t-0"."""
    asked = [(src, m) for src, m in h.brokers[broker_id].received
             if isinstance(m, AlterReplicaLogDirsRequest)]
    h.brokers[broker_id].received = [(s, m) for s, m in h.brokers[broker_id].received
                                     if not isinstance(m, AlterReplicaLogDirsRequest)]
    pairs = []
    for src, request in asked:
        results = []
        for d in request.dirs:
            for t in d.topics:
                pairs.extend((f"{t.name}-{p}", d.path) for p in t.partitions)
                results.append(AlterReplicaLogDirsTopicResult(t.name, tuple(
                    AlterReplicaLogDirsPartitionResult(p, error) for p in t.partitions)))
        h.net.send(f"broker-{broker_id}", src,
                   AlterReplicaLogDirsResponse(request.correlation_id, tuple(results)))
    h.run(SETTLE_MS)
    return pairs
