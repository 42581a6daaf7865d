"""What a broker reports to its trace recorder (``world/trace.py``), in the models' terms.

Each function is called only when ``recorder.enabled``; it reads the state a decision just
changed and hands the recorder the model variables: a replica's offsets for LogStartOffset
(leo, HW, log start, first segment's base, durable start, recovery point), a partition's ISR
as its leader sees it (the maximal ISR: members being added count at once, as for the HW) and
its leader epoch's start offset, and a fetcher's partition for FetcherFailure. Nothing here
decides anything.
"""

from __future__ import annotations

from collections.abc import Mapping

from logwright.identity import TopicPartition
from logwright.storage.log import PartitionLog
from logwright.world.trace import (
    FETCHER_FAILURE,
    LOG_START_OFFSET,
    STRAY_CLEANUP,
    Json,
    TraceRecorder,
    partition_instance,
    topic_id_text,
)


def instance(tp: TopicPartition) -> str:
    """The model instance of ``tp``."""
    return partition_instance(tp.topic, tp.partition)


def replica(recorder: TraceRecorder, broker_id: int, log: PartitionLog, action: str,
            args: Mapping[str, Json] | None = None, ckpt: int | None = None,
            always: bool = False) -> None:
    """Replica ``broker_id`` of ``log.tp`` after ``action``: its offsets now. A raised start
    offset is durable at once when the log writes its dir's checkpoint with every raise; else
    ``ckpt`` says what a periodic checkpoint wrote."""
    a: dict[str, Json] = {"replica": broker_id, "topicId": topic_id_text(log.topic_id)}
    if args:
        a.update(args)
    recorder.replica_step(f"broker-{broker_id}", instance(log.tp), broker_id, action, a,
                          _values(log, ckpt), durable=log.start_offset_checkpoint is not None,
                          always=always)


def intent(recorder: TraceRecorder, broker_id: int, log: PartitionLog, action: str,
           args: Mapping[str, Json], log_start: int, restart_at: bool = False) -> None:
    """Replica ``broker_id`` of ``log.tp`` is about to make its start offset ``log_start``
    durable for ``action``, whose event it records only once the write returns: the
    bookkeeping event ``Intent`` says so first (``TraceRecorder.intent``; traces/SCHEMA.md), so
    that a power loss during the write, which may leave it durable with no event, is explained
    by it. Call with every other effect of the action already made, or (``restart_at``) before
    the log restarts empty at ``log_start``, which every offset of it then becomes."""
    leo, hw, _, seg, ckpt, flushed = _values(log, None)
    if restart_at:
        leo = hw = seg = flushed = log_start
    intent_with(recorder, broker_id, log, action, args, (leo, hw, log_start, seg, ckpt, flushed))


def intent_with(recorder: TraceRecorder, broker_id: int, log: PartitionLog, action: str,
                args: Mapping[str, Json],
                values: tuple[int, int, int, int, int | None, int]) -> None:
    """:func:`intent` with the replica's values after the action given whole (leo, hw,
    logStart, segStart, ckptStart or None, flushed), for an action whose effects are still to
    be made when the Intent is recorded."""
    recorder.intent(f"broker-{broker_id}", instance(log.tp), broker_id, action,
                    {"replica": broker_id, "topicId": topic_id_text(log.topic_id), **args},
                    values, durable=log.start_offset_checkpoint is not None)


def replica_changes(recorder: TraceRecorder, broker_id: int, log: PartitionLog
                    ) -> dict[str, Json]:
    """Replica ``broker_id``'s offsets of ``log.tp`` that changed since its last event, for an
    event of another kind to carry (a leader that adopted a recovery election's start offset
    records it with its BecomeLeader)."""
    return recorder.replica_changes(instance(log.tp), broker_id, _values(log, None),
                                    durable=log.start_offset_checkpoint is not None,
                                    topic_id=topic_id_text(log.topic_id))


def _values(log: PartitionLog, ckpt: int | None) -> tuple[int, int, int, int, int | None, int]:
    return (log.log_end_offset, log.high_watermark, log.log_start_offset,
            log.segments[0].base_offset, ckpt, log.recovery_point)


def delete_segments_below_start_offset(recorder: TraceRecorder, broker_id: int,
                                       log: PartitionLog) -> int:
    """Delete ``log``'s segments wholly below its start offset (``PartitionLog.
    delete_segments_below_start_offset``) and, when tracing, report them as LogStartOffset's
    ``DeleteOldestSegment`` (one size per segment), as retention does; returns how many went.
    Raises what the log raises (``KafkaStorageError``)."""
    bases = [seg.base_offset for seg in log.segments] if recorder.enabled else []
    gone = log.delete_segments_below_start_offset()
    if gone and recorder.enabled:
        ends = [*bases[1:gone], log.segments[0].base_offset]
        replica(recorder, broker_id, log, "DeleteOldestSegment",
                {"segments": [end - base for base, end in zip(bases[:gone], ends, strict=True)]})
    return gone


def isr(recorder: TraceRecorder, broker_id: int, tp: TopicPartition, before: tuple[int, ...],
        after: tuple[int, ...], cause: str, known: Mapping[int, int], topic_id: str,
        broker_epochs: Mapping[int, int] | None = None) -> None:
    """The leader's ISR of ``tp`` went from ``before`` to ``after``: one ShrinkIsr per member
    dropped, one ExpandIsr per member added; ``known`` is each replica's LEO as the leader last
    heard it (its own included), ``broker_epochs`` the broker epoch each follower's last fetch
    came from (an ExpandIsr's ``brokerEpoch``)."""
    node, inst = f"broker-{broker_id}", instance(tp)
    members = set(before)
    for r in sorted(members - set(after)):
        members.discard(r)
        recorder.emit(node, LOG_START_OFFSET, inst, "ShrinkIsr",
                      {"r": r, "cause": cause, "knownLeo": known.get(r, -1),
                       "leaderLeo": known.get(broker_id, -1), "topicId": topic_id},
                      {"isr": sorted(members)})
    for r in sorted(set(after) - members):
        members.add(r)
        args: dict[str, Json] = {"r": r, "cause": cause, "knownLeo": known.get(r, -1),
                                 "leaderLeo": known.get(broker_id, -1), "topicId": topic_id}
        if broker_epochs is not None:
            args["brokerEpoch"] = broker_epochs.get(r, -1)
        recorder.emit(node, LOG_START_OFFSET, inst, "ExpandIsr", args, {"isr": sorted(members)})


def fetcher(recorder: TraceRecorder, broker_id: int, tp: TopicPartition, action: str,
            args: Mapping[str, Json], changed: Mapping[str, Json],
            topic_id: object | None = None) -> None:
    """FetcherFailure on broker ``broker_id``: ``action`` on partition ``tp`` (of the topic
    generation ``topic_id``, when known)."""
    a = {"tp": instance(tp), "topicId": topic_id_text(topic_id)}
    a.update(args)
    recorder.emit(f"broker-{broker_id}", FETCHER_FAILURE, f"broker-{broker_id}", action, a,
                  changed)


# ---- StrayCleanup (issue 10): strays set aside and revived ------------------------------------

def stray(recorder: TraceRecorder, broker_id: int, tp: TopicPartition, action: str,
          topic_id: object | None, reason: str, path: str) -> None:
    """Broker ``broker_id`` decided about its log of ``tp`` (of topic id ``topic_id``):
    ``MarkStray`` (set aside, renamed ``-stray``) or ``ReviveStray`` (live again from its
    data), for ``reason``; ``path`` is the stray dir's."""
    recorder.emit(f"broker-{broker_id}", STRAY_CLEANUP, instance(tp), action,
                  {"b": broker_id, "topicId": topic_id_text(topic_id), "reason": reason,
                   "path": path}, {})


__all__ = ["STRAY_CLEANUP", "fetcher", "instance", "isr", "replica", "stray"]
