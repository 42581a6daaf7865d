"""DescribeLogDirs: what each log dir of a broker holds, as Kafka answers it, with strays.

The answer is read from the log manager's state when the request is handled: each online dir's
live logs (size, offset lag, not future) and, a logwright extension, its strays with orphan
removal's last decision (docs/orphan-partitions.md). An offline dir answers KAFKA_STORAGE_ERROR
and lists nothing, as in Kafka. ``describe_json`` renders answers in the JSON that Kafka's
``kafka-log-dirs.sh --describe`` prints, plus each dir's ``strays``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from logwright.errors import Errors
from logwright.identity import TopicPartition, Uuid
from logwright.logmanager import LogManager
from logwright.logmanager.orphans import due_ms
from logwright.protocol.messages import (
    DescribeLogDirsPartition,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsStray,
    DescribeLogDirsTopic,
)
from logwright.world.trace import topic_id_text

#: Kafka's OffsetLag for a log the broker does not host as a replica.
INVALID_OFFSET_LAG = -1


def describe_log_dirs(log_manager: LogManager, request: DescribeLogDirsRequest,
                      hosted: Callable[[TopicPartition], bool]) -> DescribeLogDirsResponse:
    """The answer to ``request`` from ``log_manager``'s state; ``hosted`` tells whether the
    broker hosts a partition as a replica (else its offset lag is -1, as in Kafka)."""
    wanted: set[TopicPartition] | None = None
    if request.topics is not None:
        wanted = {TopicPartition(t, p) for t, parts in request.topics for p in parts}
    delay = log_manager.config.orphan_partition_removal_delay_ms
    results: list[DescribeLogDirsResult] = []
    for path in sorted(log_manager.dirs):
        state = log_manager.dirs[path]
        if not state.online:
            results.append(DescribeLogDirsResult(path, Errors.KAFKA_STORAGE_ERROR))
            continue
        by_topic: dict[str, list[DescribeLogDirsPartition]] = {}
        for tp, log in sorted(state.logs.items()):
            if wanted is not None and tp not in wanted:
                continue
            lag = (max(log.high_watermark - log.log_end_offset, 0) if hosted(tp)
                   else INVALID_OFFSET_LAG)
            by_topic.setdefault(tp.topic, []).append(
                DescribeLogDirsPartition(tp.partition, log.size_bytes, lag))
        strays = []
        for _, stray in sorted(state.strays.items()):
            if wanted is not None and stray.tp not in wanted:
                continue
            due = due_ms(stray, delay)
            strays.append(DescribeLogDirsStray(
                stray.name, stray.tp.topic, stray.tp.partition,
                stray.topic_id if stray.topic_id is not None else Uuid.ZERO, stray.since_ms,
                stray.size_bytes, stray.last_decision or "", -1 if due is None else due))
        try:
            total, usable = log_manager.fs.disk_usage(path)
        except OSError:
            total, usable = -1, -1  # the dir's own health is its error code's business
        results.append(DescribeLogDirsResult(
            path, Errors.NONE,
            tuple(DescribeLogDirsTopic(t, tuple(ps)) for t, ps in sorted(by_topic.items())),
            total, usable, tuple(strays)))
    return DescribeLogDirsResponse(request.correlation_id, Errors.NONE, tuple(results))


def describe_json(answers: Mapping[int, DescribeLogDirsResponse]) -> dict[str, Any]:
    """``answers`` (broker id -> its answer) as ``kafka-log-dirs.sh --describe`` prints them
    (``{"version": 1, "brokers": [...]}``, partitions named ``<topic>-<partition>``), each dir
    with the logwright extension ``strays``."""
    brokers = []
    for broker_id in sorted(answers):
        answer = answers[broker_id]
        dirs = []
        for result in answer.results:
            dirs.append({
                "logDir": result.log_dir,
                "error": None if result.error is Errors.NONE else result.error.name,
                "partitions": [{"partition": f"{t.name}-{p.partition_index}",
                                "size": p.partition_size, "offsetLag": p.offset_lag,
                                "isFuture": p.is_future}
                               for t in result.topics for p in t.partitions],
                "totalBytes": result.total_bytes,
                "usableBytes": result.usable_bytes,
                "strays": [{"name": s.name, "partition": f"{s.topic}-{s.partition}",
                            "topicId": topic_id_text(s.topic_id) or None,
                            "since": s.since_ms, "size": s.size_bytes,
                            "lastDecision": s.last_decision or None,
                            "nextCheck": None if s.next_check_ms < 0 else s.next_check_ms}
                           for s in result.strays],
            })
        entry: dict[str, Any] = {"broker": broker_id, "logDirs": dirs}
        if answer.error is not Errors.NONE:
            entry["error"] = answer.error.name
        brokers.append(entry)
    return {"version": 1, "brokers": brokers}


__all__ = ["INVALID_OFFSET_LAG", "describe_json", "describe_log_dirs"]
