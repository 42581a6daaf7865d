"""Playing a broker's side of a reassignment's dir moves (KIP-113) for the controller harness:
answering the controller's DescribeLogDirs and AlterReplicaLogDirs by hand."""

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
)
from tests.test_controller import SETTLE_MS, Harness

POLL_MS = ControllerConfig().dir_move_poll_ms  # how often the controller asks where a move is
Where = tuple[str | None, str | None]  # (current dir, future dir) of a replica on a broker


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
