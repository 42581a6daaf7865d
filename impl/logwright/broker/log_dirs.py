"""DescribeLogDirs: what each log dir of a broker holds, as Kafka answers it, with strays.

The answer is read from the log manager's state when the request is handled: each online dir's
live logs (size, offset lag, not future), the future logs of moves running into it (KIP-113:
size, how far the future log's end offset is behind the current log's, ``is_future``) and, a
logwright extension, its strays with orphan removal's last decision (docs/orphan-partitions.md).
An offline dir answers KAFKA_STORAGE_ERROR and lists nothing, as in Kafka. ``describe_json``
renders answers in the JSON that Kafka's ``kafka-log-dirs.sh --describe`` prints, plus each
dir's ``strays``.
"""

from __future__ import annotations

import posixpath
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
from logwright.storage.log import PartitionLog
from logwright.world.trace import topic_id_text

#: Kafka's OffsetLag for a log the broker does not host as a replica.
INVALID_OFFSET_LAG = -1


def describe_log_dirs(log_manager: LogManager, request: DescribeLogDirsRequest,
                      hosted: Callable[[TopicPartition], bool],
                      futures: Mapping[TopicPartition, PartitionLog] | None = None
                      ) -> DescribeLogDirsResponse:
    """The answer to ``request`` from ``log_manager``'s state; ``hosted`` tells whether the
    broker hosts a partition as a replica (else its offset lag is -1, as in Kafka).

    ``futures``: the future log of each partition being moved between dirs (the broker's
    dir-move engine passes them), each listed in the dir that holds it with ``is_future`` and,
    as its offset lag, the current log's end offset minus its own (Kafka's answer; never below
    0), or -1 when the current log is not on an online dir."""
    future_in: dict[str, list[tuple[TopicPartition, PartitionLog]]] = {}
    for tp, future in sorted((futures or {}).items()):
        future_in.setdefault(posixpath.dirname(future.dir_path.rstrip("/")), []).append(
            (tp, future))
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
        for tp, future in future_in.get(path, []):
            if wanted is not None and tp not in wanted:
                continue
            home = log_manager.dir_of(tp)
            current = home.logs.get(tp) if home is not None and home.online else None
            lag = (INVALID_OFFSET_LAG if current is None
                   else max(current.log_end_offset - future.log_end_offset, 0))
            by_topic.setdefault(tp.topic, []).append(
                DescribeLogDirsPartition(tp.partition, future.size_bytes, lag, is_future=True))
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
