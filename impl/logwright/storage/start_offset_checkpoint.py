"""One log dir's ``log-start-offset-checkpoint``, which each log of the dir rewrites (durably)
when it raises its start offset.

Invariant upheld here (hazard 12): a raised log start offset is on disk before the raise is
acknowledged or any file below it is deleted. Kafka writes this file only on its periodic
schedule, so a crash inside that window brings back records a DeleteRecords acknowledged as gone.

The log manager owns one per dir and hands it down to every log it creates or loads in the dir;
a log calls ``persist`` after each raise. It is a collaborator passed down, not a hook up: it
knows nothing of the manager, only the live logs of its dir (a mapping the manager keeps), and
it asks each of them for its start offset, so the file always holds every log of the dir.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Protocol

from logwright.storage.checkpoint import LOG_START_OFFSET_CHECKPOINT, OffsetCheckpointFile
from logwright.storage.naming import TopicPartition
from logwright.world.fs import FileSystem


class HasLogStartOffset(Protocol):
    """What the checkpoint asks of a log: its current start offset."""

    @property
    def log_start_offset(self) -> int:
        """The first offset a reader may ask for."""
        ...

    def start_offset_written(self, offset: int) -> None:
        """The checkpoint file now holds ``offset`` for this log, durably."""
        ...


class LogStartOffsetCheckpoint:
    """The ``log-start-offset-checkpoint`` of the dir ``log_dir``, holding every log in ``logs``.

    ``logs`` is the dir's live logs by partition, kept by the owner (the log manager); it is
    read at each write, never copied.
    """

    def __init__(self, fs: FileSystem, log_dir: str,
                 logs: Mapping[TopicPartition, HasLogStartOffset]) -> None:
        self.file = OffsetCheckpointFile(fs, posixpath.join(log_dir, LOG_START_OFFSET_CHECKPOINT))
        self._logs = logs

    def __repr__(self) -> str:
        return f"LogStartOffsetCheckpoint({self.file.path!r})"

    def write(self) -> None:
        """Rewrite the file from every log's current start offset (tmp, fsync, rename, dir
        fsync). Raises ``OSError`` if it cannot."""
        written = {tp: log.log_start_offset for tp, log in self._logs.items()}
        self.file.write(written)
        for tp, offset in written.items():
            self._logs[tp].start_offset_written(offset)

    def persist(self, tp: TopicPartition) -> None:
        """``tp``'s log raised its start offset: make it durable now. Raises ``OSError``."""
        assert tp in self._logs, f"{tp} is not a log of {self.file.path}'s dir"
        self.write()
