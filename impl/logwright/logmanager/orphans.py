"""Orphan removal (KIP-370): when a stray may be deleted, decided from facts about its files.

A stray (``strays.py``) is a partition log this broker set aside. Orphan removal deletes one
only when that cannot destroy data anyone may still want:

- this broker process has applied a FULL LeaderAndIsr of the current controller
  (``LogManager.full_request_applied``): until then a stray may be one it is about to be given
  back;
- ``orphan.partition.removal.delay.ms`` (default 2 hours) has passed since the stray was set
  aside or found at start-up (a restart starts the delay again), leaving time for a
  reassignment that moves the partition back to revive it from its own data;
- every segment of it is older than the broker's default retention (``log.retention.ms``,
  whatever its topic's own setting was): its newest record's timestamp AND its log file's
  modification time. With retention -1 (infinite) no data is ever old enough, and no stray is
  ever deleted.

Anything else defers the stray to a later check, with the reason. ``decide`` is a pure function
of (the stray, its files' facts, now, the settings); ``read_stray_facts`` reads the facts
without loading the stray as a log. The log manager runs both on its periodic task and acts on
the verdict (``LogManager.run_orphan_removal``).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from logwright.logmanager.strays import StrayLog
from logwright.storage.segment import read_newest_timestamp_ms
from logwright.world.fs import FileSystem

#: The decisions, as DescribeLogDirs and the trace name them.
DEFERRED = "deferred"
DELETED = "deleted"


@dataclass(frozen=True)
class SegmentFacts:
    """What orphan removal needs to know about one segment of a stray."""

    #: The segment's log file name (``<base offset>.log``).
    name: str
    #: The largest batch timestamp in it; -1 when it holds no batch.
    newest_timestamp_ms: int
    #: When its log file was last written.
    mtime_ms: int
    size_bytes: int


@dataclass(frozen=True)
class StrayFacts:
    """The facts of a stray's segments, or why they could not be read (``unreadable``)."""

    segments: tuple[SegmentFacts, ...] = ()
    unreadable: str | None = None

    @property
    def size_bytes(self) -> int:
        """The bytes of its segment log files."""
        return sum(s.size_bytes for s in self.segments)


@dataclass(frozen=True)
class OrphanSettings:
    """The settings orphan removal decides with (broker configs)."""

    #: orphan.partition.removal.delay.ms
    delay_ms: int
    #: The broker's default log.retention.ms; -1: infinite.
    retention_ms: int
    #: How soon a stray deferred for a reason time alone does not cure is looked at again
    #: (log.retention.check.interval.ms).
    recheck_ms: int


@dataclass(frozen=True)
class OrphanDecision:
    """Delete the stray now, or defer it to ``next_check_ms`` (None: never), and why."""

    delete: bool
    reason: str
    next_check_ms: int | None

    @property
    def name(self) -> str:
        """``deleted`` or ``deferred``."""
        return DELETED if self.delete else DEFERRED


def due_ms(stray: StrayLog, delay_ms: int) -> int | None:
    """When orphan removal looks at ``stray`` next: after its delay until its first check,
    then when its last decision said (None: never)."""
    if stray.last_decision is None:
        return stray.since_ms + delay_ms
    return stray.next_check_ms


def precheck(stray: StrayLog, now_ms: int, settings: OrphanSettings,
             full_request_applied: bool) -> OrphanDecision | None:
    """The decision about ``stray`` at ``now_ms`` when it needs no facts about its files (it
    is deferred whatever they say), else None: read them and ``decide``."""
    recheck = now_ms + settings.recheck_ms
    if not full_request_applied:
        return OrphanDecision(False, "no FULL LeaderAndIsr applied by this broker process yet: "
                              "the controller may still assign it back", recheck)
    due = stray.since_ms + settings.delay_ms
    if now_ms < due:
        return OrphanDecision(False, f"orphan.partition.removal.delay.ms not over until {due}",
                              due)
    if settings.retention_ms < 0:
        return OrphanDecision(False, "log.retention.ms is -1 (infinite): no data is ever old "
                              "enough to delete", None)
    return None


def decide(stray: StrayLog, facts: StrayFacts, now_ms: int, settings: OrphanSettings,
           full_request_applied: bool) -> OrphanDecision:
    """Whether ``stray``, whose files ``facts`` describe, may be deleted at ``now_ms``."""
    early = precheck(stray, now_ms, settings, full_request_applied)
    if early is not None:
        return early
    retention, recheck = settings.retention_ms, now_ms + settings.recheck_ms
    if facts.unreadable is not None:
        return OrphanDecision(False, f"its files cannot be read: {facts.unreadable}", recheck)
    cutoff = now_ms - retention
    young = [s for s in facts.segments if max(s.newest_timestamp_ms, s.mtime_ms) >= cutoff]
    if young:  # the age guard
        seg = max(young, key=lambda s: max(s.newest_timestamp_ms, s.mtime_ms))
        newest = max(seg.newest_timestamp_ms, seg.mtime_ms)
        what = ("a record timestamped" if seg.newest_timestamp_ms >= seg.mtime_ms
                else "its file modified at")
        return OrphanDecision(False, f"segment {seg.name} has {what} {newest}, not older than "
                              f"log.retention.ms ({retention}) at {now_ms}",
                              max(newest + retention + 1, now_ms + 1))
    return OrphanDecision(True, f"every segment's newest record and file time is older than "
                          f"log.retention.ms ({retention}), and its delay is over", None)


def read_stray_facts(fs: FileSystem, stray: StrayLog) -> StrayFacts:
    """The facts of each segment of ``stray`` (its ``.log`` files), read-only. A segment whose
    content is not a log of v2 batches makes the whole stray unreadable. OSError on an I/O
    error (the caller takes the dir offline)."""
    segments: list[SegmentFacts] = []
    for name in sorted(fs.listdir(stray.path)):
        if not name.endswith(".log"):
            continue
        path = posixpath.join(stray.path, name)
        newest = read_newest_timestamp_ms(fs, path)
        if newest is None:
            return StrayFacts(tuple(segments), f"{name} is not a log of record batches")
        segments.append(SegmentFacts(name, newest, fs.mtime_ms(path), fs.file_size(path)))
    return StrayFacts(tuple(segments))


__all__ = ["DEFERRED", "DELETED", "OrphanDecision", "OrphanSettings", "SegmentFacts",
           "StrayFacts", "decide", "due_ms", "precheck", "read_stray_facts"]
